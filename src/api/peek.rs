//! The developer endpoint's look into a queue (`/_aws/sqs/messages`, the API
//! LocalStack defined for it): its parameters, the queue it names, and one
//! page of messages in ReceiveMessage's shape. The look itself is
//! [`crate::queue::Queue::peek`], which cannot change anything.

use super::convert::message_to_wire;
use super::model::{ReceiveMessageInput, ReceiveMessageOutput};
use super::{Action, Api, Input, RequestContext, url_parts};
use crate::error::{ErrorCode, Result, SqsError};
use crate::queue::{PeekRequest, key};

/// Messages in a page when the request does not say (`MaxResults`).
pub const DEFAULT_PAGE_MESSAGES: usize = 1_000;
/// The most a request may ask for in one page.
pub const MAX_PAGE_MESSAGES: usize = 10_000;
/// A page ends with the message whose payload reaches this many bytes, so
/// that an answer stays around 8 MiB whatever the queue holds.
pub const PAGE_BYTES: usize = 8 * 1024 * 1024;
/// The receipt handle every message looked at carries (LocalStack's): no
/// delete or visibility change accepts it, since a look is not a receive.
pub const PEEK_RECEIPT_HANDLE: &str = "SQS/BACKDOOR/ACCESS";

/// What a look asks for, read from its query string and form parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeekParams {
    pub show_invisible: bool,
    pub show_delayed: bool,
    pub max_results: usize,
    /// Where the page starts: the NextToken of the page before.
    pub from: u64,
}

impl PeekParams {
    /// `ShowInvisible` and `ShowDelayed` are on for `true` or `1` (in any
    /// case, as LocalStack reads them); `MaxResults` (1 to 10,000, default
    /// 1,000) and `NextToken` page through a long queue. Other parameters
    /// (those of ReceiveMessage, say) are ignored.
    pub fn read<'a>(parameters: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<PeekParams> {
        let mut params = PeekParams {
            show_invisible: false,
            show_delayed: false,
            max_results: DEFAULT_PAGE_MESSAGES,
            from: 0,
        };
        let flag = |value: &str| value.eq_ignore_ascii_case("true") || value == "1";
        for (name, value) in parameters {
            match name {
                "ShowInvisible" => params.show_invisible = flag(value),
                "ShowDelayed" => params.show_delayed = flag(value),
                "MaxResults" => {
                    params.max_results = value
                        .parse()
                        .ok()
                        .filter(|n| (1..=MAX_PAGE_MESSAGES).contains(n))
                        .ok_or_else(|| {
                            SqsError::invalid_parameter(format!(
                                "Value {value} for parameter MaxResults is invalid. Reason: MaxResults must be between 1 and {MAX_PAGE_MESSAGES}."
                            ))
                        })?
                }
                "NextToken" => {
                    params.from = value.parse().map_err(|_| {
                        SqsError::invalid_parameter(format!(
                            "Invalid NextToken value {value:?}: pass the x-ssq-next-token of the page before."
                        ))
                    })?
                }
                _ => {}
            }
        }
        Ok(params)
    }
}

/// The QueueUrl of a request an AWS client sent to the endpoint (used as a
/// botocore `endpoint_url`): a ReceiveMessage, as LocalStack takes it.
pub fn queue_url_of(action: Action, input: Input) -> Result<Option<String>> {
    if action != Action::ReceiveMessage {
        return Err(SqsError::new(
            ErrorCode::InvalidRequest,
            "This endpoint only accepts ReceiveMessage calls",
        ));
    }
    let input: ReceiveMessageInput = input.decode()?;
    Ok(input.queue_url)
}

/// The queue a QueueUrl parameter names. As LocalStack answers: without
/// one the queue does not exist, and an address that is no queue URL at all
/// is an InvalidAddress (404).
pub fn queue_of_url(ctx: &RequestContext, url: Option<&str>) -> Result<String> {
    let url = url
        .filter(|url| !url.is_empty())
        .ok_or_else(SqsError::queue_does_not_exist)?;
    let queue_shaped = url.contains("://") || url.starts_with('/');
    let readable = match url_parts(url).1 {
        [Some(_), Some(_), None, ..] => true,
        [Some("queue"), Some(_), Some(_), Some(_), None] => true,
        [Some(_), None, ..] => !queue_shaped,
        _ => false,
    };
    if !readable {
        return Err(SqsError::new(
            ErrorCode::InvalidAddress,
            format!(
                "The address {url} is not valid for this endpoint: give a queue URL, as CreateQueue or GetQueueUrl returned it."
            ),
        ));
    }
    ctx.queue_name(Some(url))
}

/// The queue `/_aws/sqs/messages/<region>/<account>/<queue>` names.
pub fn queue_of_path(ctx: &RequestContext, region: &str, account: &str, name: &str) -> Result<String> {
    if account != ctx.account_id || !key::is_region(region) {
        return Err(SqsError::queue_does_not_exist());
    }
    Ok(key::of(&ctx.home, account, region, name))
}

/// One page of a look.
pub struct PeekPage {
    pub output: ReceiveMessageOutput,
    /// Where the next page starts, when there may be more.
    pub next_token: Option<String>,
}

/// Looks at one page of the queue's messages: every system attribute and
/// message attribute (ApproximateFirstReceiveTimestamp `0` for a message
/// never received), and (as LocalStack adds them) `IsVisible` when
/// invisible messages are asked for, `IsDelayed` when delayed ones are.
pub fn peek(api: &Api, key: &str, params: &PeekParams) -> Result<PeekPage> {
    let request = PeekRequest {
        from: params.from,
        show_invisible: params.show_invisible,
        show_delayed: params.show_delayed,
        max_messages: params.max_results,
        max_bytes: PAGE_BYTES,
    };
    let peeked = api.service.inspect(key, |queue, now| queue.peek(&request, now))?;
    let all = ["All".to_string()];
    let messages = peeked
        .messages
        .iter()
        .map(|(message, seen)| {
            let mut wire = message_to_wire(message, PEEK_RECEIPT_HANDLE.into(), &all, &all);
            // LocalStack's convention for a message never received (a
            // receive always sets it): tools read the attribute.
            wire.attributes
                .entry("ApproximateFirstReceiveTimestamp".into())
                .or_insert_with(|| "0".into());
            if params.show_invisible {
                wire.attributes
                    .insert("IsVisible".into(), seen.is_visible().to_string());
            }
            if params.show_delayed {
                wire.attributes
                    .insert("IsDelayed".into(), seen.is_delayed().to_string());
            }
            wire
        })
        .collect();
    Ok(PeekPage {
        output: ReceiveMessageOutput { messages },
        next_token: peeked.next.map(|seq| seq.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::test_context as ctx;

    #[test]
    fn reads_flags_and_paging_as_localstack_and_rejects_bad_values() {
        let params = PeekParams::read([
            ("ShowInvisible", "True"),
            ("ShowDelayed", "1"),
            ("MaxResults", "5"),
            ("NextToken", "42"),
            ("MaxNumberOfMessages", "1"),
        ])
        .unwrap();
        assert_eq!(
            params,
            PeekParams {
                show_invisible: true,
                show_delayed: true,
                max_results: 5,
                from: 42
            }
        );
        let defaults = PeekParams::read([("ShowInvisible", "false")]).unwrap();
        assert_eq!(
            (defaults.show_invisible, defaults.max_results),
            (false, DEFAULT_PAGE_MESSAGES)
        );
        for bad in [
            ("MaxResults", "0"),
            ("MaxResults", "10001"),
            ("MaxResults", "x"),
            ("NextToken", "-1"),
        ] {
            assert_eq!(
                PeekParams::read([bad]).unwrap_err().code,
                ErrorCode::InvalidParameterValue,
                "{bad:?}"
            );
        }
    }

    #[test]
    fn a_queue_url_names_a_queue_and_anything_else_is_an_invalid_address() {
        let ctx = ctx();
        assert_eq!(
            queue_of_url(&ctx, Some("http://localhost:4566/000000000000/orders")).unwrap(),
            "orders"
        );
        assert_eq!(
            queue_of_url(&ctx, Some("http://h/queue/eu-west-1/000000000000/orders")).unwrap(),
            "eu-west-1/orders"
        );
        assert_eq!(queue_of_url(&ctx, Some("orders")).unwrap(), "orders");
        for missing in [None, Some("")] {
            assert_eq!(
                queue_of_url(&ctx, missing).unwrap_err().code,
                ErrorCode::QueueDoesNotExist
            );
        }
        assert_eq!(
            queue_of_url(&ctx, Some("http://h/123456789012/orders")).unwrap(),
            "123456789012/us-east-1/orders",
            "another account's queue, open without --credentials"
        );

        for bad in ["http://localhost:4566/nonsense", "http://h/", "http://h/a/b/c"] {
            let error = queue_of_url(&ctx, Some(bad)).unwrap_err();
            assert_eq!(
                (error.code, error.code.status()),
                (ErrorCode::InvalidAddress, 404),
                "{bad}"
            );
        }
        assert_eq!(
            queue_of_path(&ctx, "eu-west-1", "000000000000", "q").unwrap(),
            "eu-west-1/q"
        );
        assert_eq!(
            queue_of_path(&ctx, "us-east-1", "000000000000", "q").unwrap(),
            "q"
        );
        assert_eq!(
            queue_of_path(&ctx, "us-east-1", "1", "q").unwrap_err().code,
            ErrorCode::QueueDoesNotExist
        );
    }
}
