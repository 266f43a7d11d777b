//! The JSON protocol's request parsing and every action behind it: the first
//! byte picks the action, the rest is the body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ssq::api::{Action, Input};

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else { return };
    let action = Action::ALL[pick as usize % Action::ALL.len()];
    common::run::<ssq::api::AsJson>(action, Input::Json(body.to_vec().into()));
});
