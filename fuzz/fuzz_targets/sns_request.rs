//! SNS's form parsing and every SNS action behind it, on a standard and a
//! FIFO topic with queues subscribed (one with a filter policy on the
//! body): the input is the form body; a line break splits off a URL query
//! string. Any answer is fine; a panic, a hang or an internal error is not.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use ssq::api::sns::{Call, dispatch};
use ssq::protocol::sns;
use ssq::topic::signing::SigningKey;

#[path = "common.rs"]
mod common;

/// Made once: an RSA key takes a moment.
fn key() -> &'static SigningKey {
    static KEY: OnceLock<SigningKey> = OnceLock::new();
    KEY.get_or_init(|| SigningKey::generate().expect("a signing key"))
}

const SETUP: &[&str] = &[
    "Action=CreateTopic&Name=t",
    "Action=CreateTopic&Name=f.fifo&Attributes.entry.1.key=FifoTopic&Attributes.entry.1.value=true",
    "Action=Subscribe&TopicArn=arn:aws:sns:us-east-1:000000000000:t&Protocol=sqs&Endpoint=arn:aws:sqs:us-east-1:000000000000:q",
    "Action=Subscribe&TopicArn=arn:aws:sns:us-east-1:000000000000:t&Protocol=sqs&Endpoint=arn:aws:sqs:us-east-1:000000000000:gone&Attributes.entry.1.key=FilterPolicyScope&Attributes.entry.1.value=MessageBody&Attributes.entry.2.key=FilterPolicy&Attributes.entry.2.value=%7B%22a%22%3A%7B%22b%22%3A%5B%7B%22prefix%22%3A%22x%22%7D%5D%7D%7D",
    "Action=Subscribe&TopicArn=arn:aws:sns:us-east-1:000000000000:f.fifo&Protocol=sqs&Endpoint=arn:aws:sqs:us-east-1:000000000000:q.fifo",
];

fuzz_target!(|data: &[u8]| {
    let (body, url_query) = match data.iter().position(|b| *b == b'\n') {
        Some(at) => (&data[..at], std::str::from_utf8(&data[at + 1..]).ok()),
        None => (data, None),
    };
    let Ok(form) = sns::read(body, url_query) else { return };
    let Some(action) = form.get("Action").map(str::to_string) else { return };
    common::with_queues(|api, ctx| async move {
        let call = Call { api: &api, ctx: &ctx, signer: key() };
        for setup in SETUP {
            let setup = sns::read(setup.as_bytes(), None).expect("a form");
            let name = setup.get("Action").expect("an action").to_string();
            dispatch(&call, &name, &setup).await.expect("the setup is valid");
        }
        if let Err(error) = dispatch(&call, &action, &form).await {
            assert!(error.status < 500, "{error}");
        }
    });
});
