//! How every surface takes a request in, before any action runs: the host
//! guard (`hosts.rs`), the request body within its cap, time and the
//! shared budget (`request_body.rs`; large answers draw on that budget too,
//! `large_answers.rs`), the keys of `--credentials` (`credentials_file.rs`)
//! and their signatures (`sigv4.rs`), HTTP Basic sign-in (`sign_in.rs`),
//! request rates (`throttle.rs`), policies (`authorization.rs`), the audit
//! trail (`audit_log.rs`, written by the layer in `audit.rs`), the host guard's layer (`host_guard.rs`), sign-in's guessing slowed (`sign_in_guard.rs`), and an SQS call admitted: signature head, body,
//! action and input (`admission.rs`). Surfaces use it; it uses none of them.

pub(in crate::http) mod admission;
pub(in crate::http) mod audit;
pub mod audit_log;
pub mod authorization;
pub mod credentials_file;
pub(in crate::http) mod host_guard;
pub(crate) mod hosts;
pub(in crate::http) mod large_answers;
pub(crate) mod request_body;
pub(in crate::http) mod sign_in;
pub(in crate::http) mod sign_in_guard;
pub mod sigv4;
pub mod throttle;
