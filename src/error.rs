//! The errors a client can see.
//!
//! Every failure that reaches a client is an [`SqsError`]: an [`ErrorCode`] from
//! the SQS API plus a message that says what went wrong. The core, the action
//! layer and both wire formats share this one type, so a rule is enforced once
//! and reported the same way in JSON and in Query/XML.

use std::fmt;

/// An SQS error: what AWS would answer for the same mistake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqsError {
    pub code: ErrorCode,
    pub message: String,
}

impl SqsError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        SqsError {
            code,
            message: message.into(),
        }
    }

    pub fn invalid_parameter(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidParameterValue, message)
    }

    pub fn missing_parameter(name: &str) -> Self {
        Self::new(
            ErrorCode::MissingParameter,
            format!("The request must contain the parameter {name}."),
        )
    }

    /// A request signed with a key the credentials do not hold.
    pub fn unknown_key() -> Self {
        Self::new(
            ErrorCode::InvalidClientTokenId,
            "The security token included in the request is invalid.",
        )
    }

    pub fn queue_does_not_exist() -> Self {
        Self::new(
            ErrorCode::QueueDoesNotExist,
            "The specified queue does not exist.",
        )
    }
}

impl fmt::Display for SqsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.code(), self.message)
    }
}

impl std::error::Error for SqsError {}

pub type Result<T, E = SqsError> = std::result::Result<T, E>;

/// The error codes ssq answers with.
///
/// `code` is the modern name (the JSON protocol's `__type`); `legacy_code` is
/// the Query-protocol name, which the JSON protocol also sends in the
/// `x-amzn-query-error` header because that is where the SDKs read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// A request ssq refuses to serve whoever sent it: one by a host name it
    /// does not answer to, or from a page of another site (`http/intake/host_guard.rs`).
    AccessDenied,
    BatchEntryIdsNotDistinct,
    BatchRequestTooLong,
    EmptyBatchRequest,
    InvalidAttributeName,
    InvalidAttributeValue,
    /// An action name the API does not have.
    InvalidAction,
    InvalidBatchEntryId,
    InvalidClientTokenId,
    InvalidMessageContents,
    InvalidParameterValue,
    /// A queue address the developer endpoint (`/_aws/sqs/messages`)
    /// cannot read as a queue URL; LocalStack's name and status for it.
    InvalidAddress,
    /// A request the endpoint it was sent to does not take (an action other
    /// than ReceiveMessage at the developer endpoint).
    InvalidRequest,
    MessageNotInflight,
    MissingAuthenticationToken,
    MissingParameter,
    OverLimit,
    PurgeQueueInProgress,
    QueueDoesNotExist,
    QueueNameExists,
    ReceiptHandleIsInvalid,
    RequestExpired,
    /// An access key over its request rate (`http/throttle.rs`); the SDKs
    /// retry it with backoff.
    RequestThrottled,
    ResourceNotFound,
    SignatureDoesNotMatch,
    TooManyEntriesInBatchRequest,
    UnsupportedOperation,
    /// The request body is larger than ssq reads.
    RequestTooLarge,
    /// The request body did not arrive in time.
    RequestTimeout,
    /// The body could not be read as the protocol's format at all.
    SerializationException,
    /// This instance does not serve queue calls now (a passive, or a leader
    /// stepping down); the client should retry, reaching the leader.
    ServiceUnavailable,
    /// A bug in ssq. Never returned for bad input.
    InternalError,
}

impl ErrorCode {
    pub fn code(self) -> &'static str {
        match self {
            ErrorCode::AccessDenied => "AccessDenied",
            ErrorCode::BatchEntryIdsNotDistinct => "BatchEntryIdsNotDistinct",
            ErrorCode::BatchRequestTooLong => "BatchRequestTooLong",
            ErrorCode::EmptyBatchRequest => "EmptyBatchRequest",
            ErrorCode::InvalidAttributeName => "InvalidAttributeName",
            ErrorCode::InvalidAttributeValue => "InvalidAttributeValue",
            ErrorCode::InvalidAction => "InvalidAction",
            ErrorCode::InvalidBatchEntryId => "InvalidBatchEntryId",
            ErrorCode::InvalidClientTokenId => "InvalidClientTokenId",
            ErrorCode::InvalidMessageContents => "InvalidMessageContents",
            ErrorCode::InvalidParameterValue => "InvalidParameterValue",
            ErrorCode::InvalidAddress => "InvalidAddress",
            ErrorCode::InvalidRequest => "InvalidRequest",
            ErrorCode::MessageNotInflight => "MessageNotInflight",
            ErrorCode::MissingAuthenticationToken => "MissingAuthenticationToken",
            ErrorCode::MissingParameter => "MissingParameter",
            ErrorCode::OverLimit => "OverLimit",
            ErrorCode::PurgeQueueInProgress => "PurgeQueueInProgress",
            ErrorCode::QueueDoesNotExist => "QueueDoesNotExist",
            ErrorCode::QueueNameExists => "QueueNameExists",
            ErrorCode::ReceiptHandleIsInvalid => "ReceiptHandleIsInvalid",
            ErrorCode::RequestExpired => "RequestExpired",
            ErrorCode::ResourceNotFound => "ResourceNotFoundException",
            ErrorCode::SignatureDoesNotMatch => "SignatureDoesNotMatch",
            ErrorCode::TooManyEntriesInBatchRequest => "TooManyEntriesInBatchRequest",
            ErrorCode::UnsupportedOperation => "UnsupportedOperation",
            ErrorCode::RequestTooLarge => "RequestEntityTooLarge",
            ErrorCode::RequestTimeout => "RequestTimeout",
            ErrorCode::SerializationException => "SerializationException",
            ErrorCode::ServiceUnavailable => "ServiceUnavailable",
            ErrorCode::RequestThrottled => "RequestThrottled",
            ErrorCode::InternalError => "InternalError",
        }
    }

    pub fn legacy_code(self) -> &'static str {
        match self {
            ErrorCode::BatchEntryIdsNotDistinct => "AWS.SimpleQueueService.BatchEntryIdsNotDistinct",
            ErrorCode::BatchRequestTooLong => "AWS.SimpleQueueService.BatchRequestTooLong",
            ErrorCode::EmptyBatchRequest => "AWS.SimpleQueueService.EmptyBatchRequest",
            ErrorCode::InvalidBatchEntryId => "AWS.SimpleQueueService.InvalidBatchEntryId",
            ErrorCode::MessageNotInflight => "AWS.SimpleQueueService.MessageNotInflight",
            ErrorCode::PurgeQueueInProgress => "AWS.SimpleQueueService.PurgeQueueInProgress",
            ErrorCode::QueueDoesNotExist => "AWS.SimpleQueueService.NonExistentQueue",
            ErrorCode::QueueNameExists => "QueueAlreadyExists",
            ErrorCode::TooManyEntriesInBatchRequest => "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
            ErrorCode::UnsupportedOperation => "AWS.SimpleQueueService.UnsupportedOperation",
            other => other.code(),
        }
    }

    pub fn status(self) -> u16 {
        match self {
            ErrorCode::AccessDenied
            | ErrorCode::OverLimit
            | ErrorCode::PurgeQueueInProgress
            | ErrorCode::MissingAuthenticationToken
            | ErrorCode::InvalidClientTokenId
            | ErrorCode::SignatureDoesNotMatch
            | ErrorCode::RequestExpired => 403,
            ErrorCode::InvalidAddress | ErrorCode::ResourceNotFound => 404,
            ErrorCode::RequestTooLarge => 413,
            ErrorCode::RequestTimeout => 408,
            ErrorCode::ServiceUnavailable => 503,
            ErrorCode::InternalError => 500,
            _ => 400,
        }
    }

    /// Whether the client caused the error ("Sender") or the server ("Receiver").
    pub fn is_sender_fault(self) -> bool {
        !matches!(self, ErrorCode::ServiceUnavailable | ErrorCode::InternalError)
    }

    /// The JSON protocol's `__type` namespace differs for the framework-level
    /// serialization error, which AWS reports from its service framework.
    pub fn json_type(self) -> String {
        match self {
            ErrorCode::SerializationException => {
                "com.amazon.coral.service#SerializationException".to_string()
            }
            // AWS's JSON names for these two differ from their Query codes
            // (which the x-amzn-query-error header still carries).
            ErrorCode::InvalidParameterValue => {
                "com.amazonaws.sqs#InvalidParameterValueException".to_string()
            }
            ErrorCode::MissingParameter => "com.amazonaws.sqs#MissingRequiredParameterException".to_string(),
            other => format!("com.amazonaws.sqs#{}", other.code()),
        }
    }
}
