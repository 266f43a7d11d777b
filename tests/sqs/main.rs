//! One ssq instance, memory-only, driven as clients drive it: every action
//! through the AWS SDK and raw HTTP, AWS's recorded answers, bad input,
//! limits, fair queues, the control API, the LocalStack drop-in, the alert
//! rules and dashboard against /metrics, the developer endpoint, both
//! protocols, SigV4 and key rotation, the audit trail, FIFO dead-letter
//! queues. Tests here run side by side.

use ssq_test_support as common;

mod accounts;
mod api;
mod audit;
mod aws_fidelity;
mod bad_input;
mod control;
mod fair;
mod fifo_dlq;
mod limits;
mod localstack;
mod observability;
mod peek;
mod policies;
mod protocols;
mod sigv4;
