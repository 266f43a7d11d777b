//! The Query protocol's form parsing and every action behind it: the input
//! is the form body; a line break splits off a URL query string.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ssq::api::Input;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let (body, url_query) = match data.iter().position(|b| *b == b'\n') {
        Some(at) => (&data[..at], std::str::from_utf8(&data[at + 1..]).ok()),
        None => (data, None),
    };
    if let Ok((action, tree)) = ssq::protocol::query::parse(body, url_query, Some("/000000000000/q")) {
        common::run::<ssq::api::AsTree>(action, Input::Tree(tree));
    }
});
