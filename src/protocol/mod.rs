//! Wire formats: how SQS requests arrive and how answers leave.
//!
//! Each format turns an HTTP request into an [`Action`](crate::api::Action)
//! and an [`Input`](crate::api::Input), and renders the JSON tree or
//! [`SqsError`](crate::error::SqsError) that [`crate::api::dispatch`] returns.

pub(crate) mod json;
pub mod query;
pub mod sns;
pub(crate) mod xml;
