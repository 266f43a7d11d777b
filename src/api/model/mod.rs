//! The SQS API's request and response shapes, a file per area as the
//! actions are (`queues.rs`, `messages.rs`, `batches.rs`, `redrive.rs`,
//! `permissions.rs`); here what several areas share.
//!
//! These follow AWS's service model: field names are the JSON protocol's, and
//! the Query protocol maps its form fields and XML elements onto the same
//! shapes, so that every action is implemented once for both wire formats.
//! Each shape's [`Shape`] table, next to it, tells the Query protocol its
//! members' names and kinds.
//! Inputs accept missing fields (each action checks what it requires, to give
//! SQS's MissingParameter error rather than a parse failure).

mod batches;
mod messages;
mod permissions;
mod queues;
mod redrive;

use std::collections::BTreeMap;

use serde::Serialize;

use super::shape::{Kind, Member, Shape};

pub use batches::*;
pub use messages::*;
pub use permissions::*;
pub use queues::*;
pub use redrive::*;

pub type StringMap = BTreeMap<String, String>;

// Members several shapes share.
const QUEUE_URL: Member = Member::text("QueueUrl");
const ENTRY_ID: Member = Member::text("Id");
const RECEIPT_HANDLE: Member = Member::text("ReceiptHandle");
const VISIBILITY_TIMEOUT: Member = Member::integer("VisibilityTimeout");
const TEXT_LIST: Kind = Kind::List(&Kind::Text);
const TAG_MAP: Kind = Kind::Map {
    key: "Key",
    value: "Value",
    of: &Kind::Text,
};
/// Queue attributes, and a message's system attributes when received.
const ATTRIBUTES: Member = Member::renamed(
    "Attributes",
    &["Attribute"],
    Kind::Map {
        key: "Name",
        value: "Value",
        of: &Kind::Text,
    },
);
const MESSAGE_ATTRIBUTE_MAP: Kind = Kind::Map {
    key: "Name",
    value: "Value",
    of: &Kind::Structure(MessageAttributeValue::MEMBERS),
};
const MESSAGE_ATTRIBUTES: Member =
    Member::renamed("MessageAttributes", &["MessageAttribute"], MESSAGE_ATTRIBUTE_MAP);
const MESSAGE_SYSTEM_ATTRIBUTES: Member = Member::renamed(
    "MessageSystemAttributes",
    &["MessageSystemAttribute"],
    MESSAGE_ATTRIBUTE_MAP,
);

#[derive(Debug, Serialize)]
pub struct Empty {}

impl Shape for Empty {
    const MEMBERS: &'static [Member] = &[];
}

/// The input of an action that acts on one queue, named by its QueueUrl:
/// the dispatcher resolves it before the action runs.
pub trait OnQueue {
    fn queue_url(&self) -> Option<&str>;
}

macro_rules! on_queue {
    ($($shape:ty),* $(,)?) => {
        $(impl OnQueue for $shape {
            fn queue_url(&self) -> Option<&str> {
                self.queue_url.as_deref()
            }
        })*
    };
}

on_queue!(
    QueueUrlInput,
    GetQueueAttributesInput,
    SetQueueAttributesInput,
    TagQueueInput,
    UntagQueueInput,
    SendMessageInput,
    ReceiveMessageInput,
    DeleteMessageInput,
    ChangeMessageVisibilityInput,
    ListDeadLetterSourceQueuesInput,
    AddPermissionInput,
    RemovePermissionInput,
);

impl<E> OnQueue for BatchInput<E> {
    fn queue_url(&self) -> Option<&str> {
        self.queue_url.as_deref()
    }
}
