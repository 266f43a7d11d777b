//! SNS's wire format: the Query protocol (form-encoded `Action=…` requests,
//! what every AWS SDK and the CLI send for SNS) answered with XML in the
//! `http://sns.amazonaws.com/doc/2010-03-31/` namespace.
//!
//! The form is read flat into the API's [`Form`]; the API's [`Answer`]
//! tree is written as AWS writes it.

use axum::http::StatusCode;
use axum::response::Response;

use super::query;
use super::xml::escape;
use crate::api::sns::{Answer, Form};
use crate::topic::SnsError;

const NAMESPACE: &str = "http://sns.amazonaws.com/doc/2010-03-31/";

/// Reads a form body and the URL's query string (at most 2,000
/// parameters, as the SQS Query protocol).
pub fn read(body: &[u8], url_query: Option<&str>) -> Result<Form, SnsError> {
    let pairs = query::parameters(body, url_query)?;
    Ok(Form::from_fields(pairs.into_iter().collect()))
}

/// Writes an answer's tree as AWS's XML.
fn write(answer: &Answer, out: &mut String) {
    match answer {
        Answer::Text(text) => out.push_str(&escape(text)),
        Answer::Fields(fields) => {
            for (name, value) in fields {
                out.push_str(&format!("<{name}>"));
                write(value, out);
                out.push_str(&format!("</{name}>"));
            }
        }
        Answer::List(items) => {
            for item in items {
                out.push_str("<member>");
                write(item, out);
                out.push_str("</member>");
            }
        }
        Answer::Map(entries) => {
            for (key, value) in entries {
                out.push_str("<entry><key>");
                out.push_str(&escape(key));
                out.push_str("</key><value>");
                out.push_str(&escape(value));
                out.push_str("</value></entry>");
            }
        }
    }
}

/// A successful answer: `<{Action}Response>` with the result (when the
/// action has one) and the request id.
pub fn success(action: &str, request_id: &str, result: Option<&Answer>) -> Response {
    let mut xml = format!("<{action}Response xmlns=\"{NAMESPACE}\">");
    if let Some(result) = result {
        xml.push_str(&format!("<{action}Result>"));
        write(result, &mut xml);
        xml.push_str(&format!("</{action}Result>"));
    }
    xml.push_str(&format!(
        "<ResponseMetadata><RequestId>{request_id}</RequestId></ResponseMetadata></{action}Response>"
    ));
    query::with_headers(StatusCode::OK, request_id, xml)
}

/// An error answer, as SNS writes them.
pub fn error(request_id: &str, error: &SnsError) -> Response {
    let kind = if error.is_sender_fault() {
        "Sender"
    } else {
        "Receiver"
    };
    let xml = format!(
        "<ErrorResponse xmlns=\"{NAMESPACE}\"><Error><Type>{kind}</Type><Code>{}</Code><Message>{}</Message></Error><RequestId>{request_id}</RequestId></ErrorResponse>",
        escape(error.code),
        escape(&error.message)
    );
    let status = StatusCode::from_u16(error.status).unwrap_or(StatusCode::BAD_REQUEST);
    query::with_headers(status, request_id, xml)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_structures_and_maps_are_read_in_number_order() {
        let body = b"Action=X&AttributeNames.member.2=b&AttributeNames.member.1=a&\
            Tags.member.1.Key=k&Tags.member.1.Value=v&\
            Attributes.entry.2.key=B&Attributes.entry.2.value=2&Attributes.entry.1.key=A&Attributes.entry.1.value=1&\
            MessageAttributes.entry.1.Name=n&MessageAttributes.entry.1.Value.DataType=String&MessageAttributes.entry.1.Value.StringValue=s";
        let form = read(body, None).unwrap();
        assert_eq!(form.list("AttributeNames"), vec!["a", "b"]);
        assert_eq!(form.structures("Tags")[0]["Value"], "v");
        let map = form.map("Attributes");
        assert_eq!((map[0].0.as_str(), map[0].1[""].as_str()), ("A", "1"));
        let attributes = form.map("MessageAttributes");
        assert_eq!(attributes[0].1["StringValue"], "s");
        let missing = form.required("TopicArn").unwrap_err().message;
        assert!(missing.contains("'topicArn'"), "{missing}");
    }

    #[test]
    fn answers_are_written_as_aws_writes_them() {
        let answer = Answer::Fields(vec![
            (
                "Topics",
                Answer::List(vec![Answer::Fields(vec![("TopicArn", Answer::text("a<b"))])]),
            ),
            ("Attributes", Answer::Map(vec![("k".into(), "v".into())])),
        ]);
        let mut xml = String::new();
        write(&answer, &mut xml);
        assert_eq!(
            xml,
            "<Topics><member><TopicArn>a&lt;b</TopicArn></member></Topics><Attributes><entry><key>k</key><value>v</value></entry></Attributes>"
        );
    }
}
