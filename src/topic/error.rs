//! The errors an SNS client can see: AWS's code, its HTTP status and a
//! message in AWS's words. SNS names its errors apart from SQS (`NotFound`,
//! `InvalidParameter`), so they are a type of their own; the faults both
//! APIs share (a bad signature, a body too large, an instance that does not
//! serve) arrive as [`SqsError`]s and keep their code and status.

use crate::error::SqsError;

/// An SNS error: what AWS would answer for the same mistake.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct SnsError {
    pub code: &'static str,
    pub status: u16,
    pub message: String,
}

impl SnsError {
    pub fn new(code: &'static str, status: u16, message: impl Into<String>) -> SnsError {
        SnsError {
            code,
            status,
            message: message.into(),
        }
    }

    /// `InvalidParameter`: the message is given whole, since AWS words each
    /// one differently ("Invalid parameter: TopicArn", "Invalid parameter:
    /// Attributes Reason: …").
    pub fn invalid(message: impl Into<String>) -> SnsError {
        SnsError::new("InvalidParameter", 400, message)
    }

    /// `InvalidParameter` with AWS's usual prefix: "Invalid parameter: {what}".
    pub fn parameter(what: impl std::fmt::Display) -> SnsError {
        SnsError::invalid(format!("Invalid parameter: {what}"))
    }

    /// `ParameterValueInvalid`: what AWS answers for bad message attributes.
    pub fn value_invalid(message: impl Into<String>) -> SnsError {
        SnsError::new("ParameterValueInvalid", 400, message)
    }

    pub fn not_found(message: impl Into<String>) -> SnsError {
        SnsError::new("NotFound", 404, message)
    }

    pub fn topic_not_found() -> SnsError {
        SnsError::not_found("Topic does not exist")
    }

    pub fn subscription_not_found() -> SnsError {
        SnsError::not_found("Subscription does not exist")
    }

    /// `ValidationError`: a member the model requires, left out.
    pub fn validation(message: impl Into<String>) -> SnsError {
        SnsError::new("ValidationError", 400, message)
    }

    /// A required member missing, as AWS's model validation words it.
    pub fn missing(member: &str) -> SnsError {
        SnsError::validation(format!(
            "1 validation error detected: Value null at '{member}' failed to satisfy constraint: Member must not be null"
        ))
    }

    /// Whether the client caused it ("Sender") or the server ("Receiver").
    pub fn is_sender_fault(&self) -> bool {
        self.status < 500
    }
}

impl From<SqsError> for SnsError {
    fn from(error: SqsError) -> SnsError {
        // SNS names a refusal by policy AuthorizationError, where SQS says
        // AccessDenied.
        let code = match error.code {
            crate::error::ErrorCode::AccessDenied => "AuthorizationError",
            other => other.code(),
        };
        SnsError::new(code, error.code.status(), error.message)
    }
}

pub type Result<T, E = SnsError> = std::result::Result<T, E>;
