//! The SQS API, independent of wire format.
//!
//! A wire format names an [`Action`] and hands over the request as an
//! [`Input`]; [`dispatch`] decodes it into the action's shape from
//! [`model`], resolves the queue its QueueUrl names (for the actions that
//! act on one queue), runs the action and returns the response as a JSON
//! tree, which the wire format then renders.
//!
//! The actions live by area, one file each: [`queues`], [`messages`],
//! [`batches`], [`redrive`] (dead-letter queues and move tasks) and
//! [`permissions`]; the checks they share are in [`params`], the message
//! conversions in `convert.rs`. Adding an action means a shape in [`model`], a
//! function in one of those files and a line in the table below.

mod batches;
mod convert;
mod messages;
pub(crate) mod model;
mod params;
pub(crate) mod peek;
mod permissions;
mod queues;
mod redrive;
mod route;
pub(crate) mod shape;
pub mod sns;

pub use route::{Route, route};

use std::sync::{Arc, OnceLock};

use serde::de::DeserializeOwned;

use crate::error::{ErrorCode, Result, SqsError};
use crate::queue::key::{self, Home};
use crate::service::Service;
use crate::service::move_tasks::MoveTasks;
use crate::service::replays::Replays;
use crate::service::shards::Catalog;
use model::*;
use shape::{Member, Shape};

/// What the actions run against: the queues of one shard, and the move
/// tasks between them; in a sharded group, every shard's queues as the
/// store holds them (`catalog`: ListQueues, and the dead-letter rules for queues
/// of other shards; which shard a queue is in, the service knows).
pub struct Api {
    pub service: Arc<Service>,
    pub move_tasks: MoveTasks,
    /// Replays of FIFO topics' archives (in a sharded group, the first
    /// shard's, which holds the topics).
    pub replays: Replays,
    pub catalog: Option<Arc<dyn Catalog>>,
}

impl Api {
    /// The API of an unsharded group: one shard holds every queue.
    pub fn new(service: Arc<Service>) -> Api {
        Api {
            move_tasks: MoveTasks::new(service.clone(), None),
            replays: Replays::new(service.clone()),
            service,
            catalog: None,
        }
    }

    /// The API of one shard of a sharded group.
    pub fn sharded(service: Arc<Service>, catalog: Arc<dyn Catalog>) -> Api {
        Api {
            move_tasks: MoveTasks::new(service.clone(), Some(catalog.clone())),
            replays: Replays::new(service.clone()),
            service,
            catalog: Some(catalog),
        }
    }
}

/// Who is asking and how to address queues in the answer.
pub struct RequestContext {
    /// Scheme and authority that queue URLs start with, e.g. `http://127.0.0.1:9324`.
    pub base_url: String,
    /// The caller's account: its key's (`--credentials`), or the instance's
    /// own. Queues it names by name, and lists, are this account's.
    pub account_id: String,
    /// The region the request is for (its signature's), which names the
    /// queue in calls that give a name and not a URL.
    pub region: RequestRegion,
    /// The instance's own account and region; see `queue::key`.
    pub home: Home,
    /// With `--credentials`, the key that signed the request (the user
    /// `arn:aws:iam::<account>:user/<key>` to policies).
    pub key_id: Option<String>,
    /// The most queues the caller's account may hold (`max_queues` in the
    /// credentials file).
    pub max_queues: Option<usize>,
    /// The caller's identity policy, where its key has one and the call is
    /// to be checked against it where its queue is read
    /// ([`RequestContext::authorize_queue`]).
    pub identity: Option<Box<dyn IdentityPolicy>>,
    /// The SenderId attribute of messages this request sends.
    pub sender_id: std::sync::Arc<str>,
    /// The request's X-Amzn-Trace-Id header: SendMessage gives it to the
    /// message as its AWSTraceHeader unless the message sets its own.
    pub trace_id: Option<String>,
}

/// A caller's identity policy (the credentials file's `policy` of its key),
/// as the wire layer, which knows the call's key, address and time, puts
/// it to the API.
pub trait IdentityPolicy: Send + Sync {
    /// Refuses `action` (`sqs:SendMessage`) on `resource` (an ARN) unless
    /// the policy allows it, in AWS's words.
    fn authorize(&self, action: &str, resource: &str) -> Result<()>;
}

/// The region a request is in, read when an action first asks: calls that
/// name their queue by URL (most of them) never do, and reading it from a
/// signature showed at 1 to 2% of a round trip's instructions.
pub struct RequestRegion {
    region: OnceLock<String>,
    read: Option<Box<dyn Fn() -> String + Send + Sync>>,
}

impl RequestRegion {
    pub fn known(region: &str) -> RequestRegion {
        RequestRegion {
            region: OnceLock::from(region.to_string()),
            read: None,
        }
    }

    /// A region that `read` tells, if it is ever needed.
    pub fn read_when_asked(read: impl Fn() -> String + Send + Sync + 'static) -> RequestRegion {
        RequestRegion {
            region: OnceLock::new(),
            read: Some(Box::new(read)),
        }
    }

    pub fn get(&self) -> &str {
        self.region
            .get_or_init(|| self.read.as_ref().map(|read| read()).unwrap_or_default())
    }
}

impl RequestContext {
    /// The key of the caller's queue called `name` in the request's region.
    pub fn queue_key(&self, name: &str) -> String {
        key::of(&self.home, &self.account_id, self.region.get(), name)
    }

    /// The key of the queue called `name` of `owner` (GetQueueUrl's
    /// QueueOwnerAWSAccountId; the caller's when none) in the request's
    /// region.
    pub fn owned_queue_key(&self, owner: Option<&str>, name: &str) -> String {
        let account = owner.unwrap_or(&self.account_id);
        key::of(&self.home, account, self.region.get(), name)
    }

    /// Whether the caller may take `action` on the queue keyed `key`: by its
    /// own policy, where the context carries it (`identity`), then by the
    /// queue's policy (its `Policy`, AddPermission's grants), with
    /// `--credentials`. As AWS combines them: for a queue of another
    /// account, only where a statement allows the caller (its account or
    /// its user) the action and none denies it; for one of the caller's own
    /// account, unless a statement denies it (what the caller's key may do
    /// its own policy said before). A refusal is AWS's, whether the queue
    /// exists or not, so it tells nothing of it. Without `--credentials`,
    /// every queue is open to every request.
    pub fn authorize_queue(&self, api: &Api, action: Action, key: &str) -> Result<()> {
        let Some(key_id) = &self.key_id else {
            return Ok(());
        };
        if let Some(identity) = &self.identity {
            identity.authorize(action.policy_name(), &self.queue_arn(key))?;
        }
        let own = self.account_of(key) == self.account_id;
        let policy = api.service.queue_policy(key);
        if own && policy.is_none() {
            return Ok(());
        }
        let decision = policy.map_or(crate::policy::Decision::ImplicitDeny, |policy| {
            let context = crate::policy::condition::Context::from([(
                "aws:principalaccount".to_string(),
                vec![self.account_id.clone()],
            )]);
            policy.evaluate(&crate::policy::Request {
                action: action.policy_name(),
                resource: &self.queue_arn(key),
                context: &context,
                principal: Some(crate::policy::Principal::User {
                    account: &self.account_id,
                    arn: &crate::policy::user_arn(&self.account_id, key_id),
                }),
            })
        });
        match decision {
            crate::policy::Decision::Allow => Ok(()),
            crate::policy::Decision::ImplicitDeny if own => Ok(()),
            _ => Err(SqsError::new(
                ErrorCode::AccessDenied,
                format!("Access to the resource {} is denied.", self.queue_url(key)),
            )),
        }
    }

    /// How the keys of the caller's queues in the request's region start,
    /// for listing them.
    pub fn listed_key_prefix(&self) -> String {
        key::prefix(&self.home, &self.account_id, self.region.get())
    }

    /// A queue's URL: `<base>/<account>/<name>` in the instance's own
    /// region, `<base>/queue/<region>/<account>/<name>` in another.
    pub fn queue_url(&self, key: &str) -> String {
        let parts = key::split(key);
        let (account, region) = (parts.account_or(&self.home), parts.region_or(&self.home));
        match region == self.home.region {
            true => format!("{}/{account}/{}", self.base_url, parts.name),
            false => format!("{}/queue/{region}/{account}/{}", self.base_url, parts.name),
        }
    }

    pub fn queue_arn(&self, key: &str) -> String {
        key::arn(key, &self.home)
    }

    /// The account of the queue keyed `key`.
    pub fn account_of<'a>(&'a self, key: &'a str) -> &'a str {
        key::split(key).account_or(&self.home)
    }

    /// The key of the queue a QueueUrl points at. The host is ignored, so a
    /// client may reach ssq under any name. As AWS does, a bare queue name
    /// is taken for the caller's queue (in the request's region), and any
    /// other address that names no queue is a queue that does not exist. A
    /// URL of another account names that account's queue, which the caller
    /// may or may not reach ([`RequestContext::authorize_queue`]).
    pub fn queue_name(&self, url: Option<&str>) -> Result<String> {
        let url = url.ok_or_else(|| SqsError::missing_parameter("QueueUrl"))?;
        if !url.is_empty() && !url.contains('/') {
            return Ok(self.queue_key(url));
        }
        let (host, segments) = url_parts(url);
        match segments {
            [Some(account), Some(name), None, ..] if key::is_account(account) => {
                // The host form `sqs.<region>.<domain>`, as AWS's own URLs are.
                let region = host
                    .strip_prefix("sqs.")
                    .and_then(|rest| rest.split('.').next())
                    .filter(|region| key::is_region(region))
                    .unwrap_or(&self.home.region);
                Ok(key::of(&self.home, account, region, name))
            }
            [Some("queue"), Some(region), Some(account), Some(name), None]
                if key::is_account(account) && key::is_region(region) =>
            {
                Ok(key::of(&self.home, account, region, name))
            }
            _ => Err(SqsError::queue_does_not_exist()),
        }
    }
}

/// A URL's host and its first five path segments (query and fragment left
/// out; no more are needed to tell a queue URL).
pub(crate) fn url_parts(url: &str) -> (&str, [Option<&str>; 5]) {
    let (host, path) = match url.split_once("://") {
        Some((_, rest)) => rest.split_once('/').unwrap_or((rest, "")),
        None => ("", url),
    };
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let mut segments = path.split('/').filter(|s| !s.is_empty());
    (host, std::array::from_fn(|_| segments.next()))
}

/// A request body, in the shape its wire format produced.
pub enum Input {
    /// An AWS JSON 1.0 body.
    Json(bytes::Bytes),
    /// A tree built from another wire format (the Query protocol's form).
    Tree(serde_json::Value),
}

impl Input {
    fn decode<T: DeserializeOwned>(self) -> Result<T> {
        let unreadable = |why: String| {
            SqsError::new(
                ErrorCode::SerializationException,
                format!("The request body could not be read: {why}."),
            )
        };
        match self {
            Input::Json(bytes) => match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
                None => serde_json::from_slice(b"{}").map_err(|e| unreadable(e.to_string())),
                // serde would also read a struct from an array; SQS takes objects only.
                Some(b'{') => serde_json::from_slice(&bytes).map_err(|e| unreadable(e.to_string())),
                Some(_) => Err(unreadable("the input must be a JSON object".into())),
            },
            Input::Tree(value) => serde_json::from_value(value).map_err(|e| unreadable(e.to_string())),
        }
    }
}

/// The dispatch table: every action of the SQS API, its input and output
/// shapes, and the function that runs it. `(on_queue)` marks the actions
/// that act on the queue their QueueUrl names; the queue is resolved before
/// the function runs, which gets its name.
macro_rules! actions {
    ($($name:ident $(($on_queue:ident))?: $input:ty => $output:ty = $handler:path,)*) => {
        /// Every action of the SQS API.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Action { $($name),* }

        impl Action {
            pub const ALL: &[Action] = &[$(Action::$name),*];

            pub fn from_name(name: &str) -> Option<Action> {
                match name { $(stringify!($name) => Some(Action::$name),)* _ => None }
            }

            pub fn name(self) -> &'static str {
                match self { $(Action::$name => stringify!($name)),* }
            }

            /// The permission that governs the action, as policies name it
            /// (`sqs:SendMessage`). A batch action has none of its own: its
            /// single action's governs it (SQS Developer Guide, "Amazon SQS
            /// batch actions"), so a policy's Allow, Deny and AddPermission's
            /// grant of SendMessage bind SendMessageBatch alike.
            pub fn policy_name(self) -> &'static str {
                match self.governed_by() { $(Action::$name => concat!("sqs:", stringify!($name))),* }
            }

            /// The single action whose permission a call of this one needs:
            /// itself, but for the three batch actions.
            pub fn governed_by(self) -> Action {
                match self {
                    Action::SendMessageBatch => Action::SendMessage,
                    Action::DeleteMessageBatch => Action::DeleteMessage,
                    Action::ChangeMessageVisibilityBatch => Action::ChangeMessageVisibility,
                    single => single,
                }
            }

            /// Whether a request may be sent to a queue URL: the actions that
            /// act on the queue their QueueUrl names, and GetQueueUrl, as
            /// AWS takes them there.
            pub fn served_at_queue_url(self) -> bool {
                self == Action::GetQueueUrl || self.on_queue()
            }

            /// Whether the action acts on the queue its QueueUrl names, which
            /// [`dispatch`] reads (and checks: [`RequestContext::authorize_queue`])
            /// before it runs.
            pub fn on_queue(self) -> bool {
                match self { $(Action::$name => on_queue_flag!($($on_queue)?)),* }
            }

            /// The members of the action's request, for wire formats that
            /// need the model spelled out.
            pub fn input_members(self) -> &'static [Member] {
                match self { $(Action::$name => <$input as Shape>::MEMBERS),* }
            }

            /// The members of the action's response.
            pub fn output_members(self) -> &'static [Member] {
                match self { $(Action::$name => <$output as Shape>::MEMBERS),* }
            }
        }

        /// The input of `action` decoded from `tree`, as Debug text: lets the
        /// wire formats' tests see which fields a tree filled.
        #[cfg(test)]
        pub(crate) fn decoded_debug(action: Action, tree: serde_json::Value) -> Result<String> {
            match action {
                $(Action::$name => Input::Tree(tree).decode::<$input>().map(|input| format!("{input:?}")),)*
            }
        }

        /// Runs one action and returns its response rendered by `R`.
        pub async fn dispatch<R: Render>(api: &Api, ctx: &RequestContext, action: Action, input: Input) -> Result<R::Output> {
            match action {
                $(Action::$name => run!(R, api, ctx, Action::$name, input: $input => $output, $($on_queue)? $handler),)*
            }
        }
    };
}

/// `true` for the actions the table marks `(on_queue)`.
macro_rules! on_queue_flag {
    (on_queue) => {
        true
    };
    () => {
        false
    };
}

/// One arm of [`dispatch`]: decode, resolve the queue if the action acts on
/// one (a queue that does not exist is the first thing reported, before any
/// parameter's error, as AWS reports it), run, render.
macro_rules! run {
    ($render:ident, $api:ident, $ctx:ident, $action:expr, $input:ident: $in:ty => $out:ty, on_queue $handler:path) => {{
        let input: $in = $input.decode()?;
        let name = $ctx.queue_name(model::OnQueue::queue_url(&input))?;
        $ctx.authorize_queue($api, $action, &name)?;
        $api.service.ensure_exists(&name)?;
        $render::render::<$out>($handler($api, $ctx, &name, input).await?)
    }};
    ($render:ident, $api:ident, $ctx:ident, $action:expr, $input:ident: $in:ty => $out:ty, $handler:path) => {{
        let input: $in = $input.decode()?;
        $render::render::<$out>($handler($api, $ctx, input).await?)
    }};
}

actions! {
    AddPermission(on_queue): AddPermissionInput => Empty = permissions::add_permission,
    CancelMessageMoveTask: CancelMessageMoveTaskInput => CancelMessageMoveTaskOutput = redrive::cancel_message_move_task,
    ChangeMessageVisibility(on_queue): ChangeMessageVisibilityInput => Empty = messages::change_message_visibility,
    ChangeMessageVisibilityBatch(on_queue): BatchInput<ChangeMessageVisibilityBatchEntry>
        => BatchOutput<ChangeMessageVisibilityBatchResultEntry> = batches::change_message_visibility_batch,
    CreateQueue: CreateQueueInput => QueueUrlOutput = queues::create_queue,
    DeleteMessage(on_queue): DeleteMessageInput => Empty = messages::delete_message,
    DeleteMessageBatch(on_queue): BatchInput<DeleteMessageBatchEntry>
        => BatchOutput<DeleteMessageBatchResultEntry> = batches::delete_message_batch,
    DeleteQueue(on_queue): QueueUrlInput => Empty = queues::delete_queue,
    GetQueueAttributes(on_queue): GetQueueAttributesInput => AttributesOutput = queues::get_queue_attributes,
    GetQueueUrl: GetQueueUrlInput => QueueUrlOutput = queues::get_queue_url,
    ListDeadLetterSourceQueues(on_queue): ListDeadLetterSourceQueuesInput
        => ListDeadLetterSourceQueuesOutput = redrive::list_dead_letter_source_queues,
    ListMessageMoveTasks: ListMessageMoveTasksInput => ListMessageMoveTasksOutput = redrive::list_message_move_tasks,
    ListQueueTags(on_queue): QueueUrlInput => TagsOutput = queues::list_queue_tags,
    ListQueues: ListQueuesInput => ListQueuesOutput = queues::list_queues,
    PurgeQueue(on_queue): QueueUrlInput => Empty = queues::purge_queue,
    ReceiveMessage(on_queue): ReceiveMessageInput => ReceiveMessageOutput = messages::receive_message,
    RemovePermission(on_queue): RemovePermissionInput => Empty = permissions::remove_permission,
    SendMessage(on_queue): SendMessageInput => SendMessageOutput = messages::send_message,
    SendMessageBatch(on_queue): BatchInput<SendMessageBatchEntry>
        => BatchOutput<SendMessageBatchResultEntry> = batches::send_message_batch,
    SetQueueAttributes(on_queue): SetQueueAttributesInput => Empty = queues::set_queue_attributes,
    StartMessageMoveTask: StartMessageMoveTaskInput => TaskHandleOutput = redrive::start_message_move_task,
    TagQueue(on_queue): TagQueueInput => Empty = queues::tag_queue,
    UntagQueue(on_queue): UntagQueueInput => Empty = queues::untag_queue,
}

/// What [`dispatch`] makes of an action's typed output.
pub trait Render {
    type Output;
    fn render<T: serde::Serialize>(output: T) -> Result<Self::Output>;
}

/// The output as a JSON tree: what the Query protocol's XML is written
/// from, by walking it beside the action's shape.
pub struct AsTree;

impl Render for AsTree {
    type Output = serde_json::Value;
    fn render<T: serde::Serialize>(output: T) -> Result<serde_json::Value> {
        serde_json::to_value(output).map_err(not_rendered)
    }
}

/// The output as the JSON protocol's body, written straight from the typed
/// output: no tree to build and drop on every request.
pub struct AsJson;

impl Render for AsJson {
    type Output = Vec<u8>;
    fn render<T: serde::Serialize>(output: T) -> Result<Vec<u8>> {
        serde_json::to_vec(&output).map_err(not_rendered)
    }
}

fn not_rendered(error: serde_json::Error) -> SqsError {
    SqsError::new(
        ErrorCode::InternalError,
        format!("could not render the response: {error}"),
    )
}

/// A request from account 000000000000 in us-east-1, the home region, for
/// the API's unit tests.
#[cfg(test)]
pub(crate) fn test_context() -> RequestContext {
    RequestContext {
        base_url: "http://localhost:9324".into(),
        account_id: "000000000000".into(),
        region: RequestRegion::known("us-east-1"),
        home: Home {
            account: "000000000000".into(),
            region: "us-east-1".into(),
        },
        key_id: None,
        identity: None,
        max_queues: None,
        sender_id: "000000000000".into(),
        trace_id: None,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn ctx() -> RequestContext {
        test_context()
    }

    #[test]
    fn queues_of_other_regions_have_their_region_in_key_url_and_arn() {
        let ctx = RequestContext {
            region: RequestRegion::read_when_asked(|| "eu-north-1".into()),
            ..ctx()
        };
        assert_eq!(ctx.queue_key("orders"), "eu-north-1/orders");
        assert_eq!(ctx.listed_key_prefix(), "eu-north-1/");
        let url = ctx.queue_url("eu-north-1/orders");
        assert_eq!(url, "http://localhost:9324/queue/eu-north-1/000000000000/orders");
        assert_eq!(ctx.queue_name(Some(&url)).unwrap(), "eu-north-1/orders");
        assert_eq!(
            ctx.queue_arn("eu-north-1/orders"),
            "arn:aws:sqs:eu-north-1:000000000000:orders"
        );
        assert_eq!(
            ctx.queue_name(Some("orders")).unwrap(),
            "eu-north-1/orders",
            "a bare name: the request's region"
        );
        assert_eq!(
            ctx.queue_name(Some("http://localhost:9324/000000000000/orders"))
                .unwrap(),
            "orders",
            "a URL without a region: the instance's own"
        );
        assert_eq!(
            ctx.queue_name(Some("https://sqs.eu-north-1.amazonaws.com/000000000000/orders"))
                .unwrap(),
            "eu-north-1/orders",
            "the host form"
        );
        assert_eq!(
            ctx.queue_name(Some("http://h/queue/us-east-1/000000000000/orders"))
                .unwrap(),
            "orders",
            "the path form of the instance's own region"
        );
        assert_eq!(
            ctx.queue_url("orders"),
            "http://localhost:9324/000000000000/orders"
        );
        assert_eq!(
            ctx.queue_arn("orders"),
            "arn:aws:sqs:us-east-1:000000000000:orders"
        );
    }

    #[test]
    fn queue_urls_resolve_by_account_and_name_whatever_the_host() {
        let ctx = ctx();
        for url in [
            "http://localhost:9324/000000000000/orders",
            "https://sqs.us-east-1.amazonaws.com/000000000000/orders",
            "http://elsewhere/000000000000/orders/",
            "/000000000000/orders",
        ] {
            assert_eq!(ctx.queue_name(Some(url)).unwrap(), "orders", "{url}");
        }
        assert_eq!(
            ctx.queue_name(Some("http://h/123456789012/orders")).unwrap(),
            "123456789012/us-east-1/orders",
            "another account's queue"
        );
        assert_eq!(
            ctx.queue_name(Some("http://h/queue/eu-north-1/123456789012/orders"))
                .unwrap(),
            "123456789012/eu-north-1/orders"
        );
        assert_eq!(
            ctx.queue_url("123456789012/eu-north-1/orders"),
            "http://localhost:9324/queue/eu-north-1/123456789012/orders"
        );
        assert_eq!(
            ctx.queue_url("123456789012/us-east-1/orders"),
            "http://localhost:9324/123456789012/orders"
        );
        assert_eq!(
            ctx.queue_arn("123456789012/us-east-1/orders"),
            "arn:aws:sqs:us-east-1:123456789012:orders"
        );
        assert_eq!(ctx.queue_name(Some("orders")).unwrap(), "orders", "a bare name");
        for bad in [
            "http://h/",
            "http://h/orders",
            "http://h/12345/orders",
            "x/y/z",
            "",
        ] {
            assert_eq!(
                ctx.queue_name(Some(bad)).unwrap_err().code,
                ErrorCode::QueueDoesNotExist,
                "{bad}"
            );
        }
        assert_eq!(
            ctx.queue_name(None).unwrap_err().code,
            ErrorCode::MissingParameter
        );
    }

    #[tokio::test]
    async fn a_queue_is_reached_only_where_its_policy_allows_or_does_not_deny() {
        let service = Arc::new(Service::new(
            Arc::new(crate::queue::clock::TokioClock::new(1_700_000_000_000)),
            Arc::new(crate::metrics::Metrics::new("test")),
        ));
        let api = Api::new(service.clone());
        let policy = r#"{"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::111111111111:root"}, "Action": "SQS:SendMessage", "Resource": "arn:aws:sqs:us-east-1:222222222222:shared"},
            {"Effect": "Allow", "Principal": {"AWS": ["arn:aws:iam::333333333333:user/AKIDC"]}, "Action": "sqs:*"},
            {"Effect": "Deny", "Principal": "*", "Action": "sqs:PurgeQueue"},
            {"Effect": "Deny", "Principal": "*", "Action": "sqs:DeleteMessage"}]}"#;
        let attributes = BTreeMap::from([("Policy".to_string(), policy.to_string())]);
        let shared = "222222222222/us-east-1/shared";
        service
            .create_queue(shared, &attributes, BTreeMap::new())
            .await
            .unwrap();
        let caller = |account: &str, key: &str| RequestContext {
            account_id: account.into(),
            key_id: Some(key.to_string()),
            ..test_context()
        };
        let (a, c, d) = (
            caller("111111111111", "AKIDA"),
            caller("333333333333", "AKIDC"),
            caller("444444444444", "AKIDD"),
        );
        let reached =
            |ctx: &RequestContext, action, key: &str| ctx.authorize_queue(&api, action, key).is_ok();
        assert!(reached(&a, Action::SendMessage, shared), "granted to A's account");
        assert!(
            reached(&a, Action::SendMessageBatch, shared),
            "SendMessage's grant governs its batch"
        );
        assert!(
            !reached(&c, Action::DeleteMessageBatch, shared),
            "a Deny of DeleteMessage binds its batch"
        );
        assert!(!reached(&a, Action::ReceiveMessage, shared), "only SendMessage");
        assert!(reached(&c, Action::ReceiveMessage, shared), "granted to C's user");
        assert!(!reached(&c, Action::PurgeQueue, shared), "an explicit deny");
        assert!(
            !reached(&d, Action::SendMessage, shared),
            "granted to no one else"
        );
        let refused = a
            .authorize_queue(&api, Action::SendMessage, "222222222222/us-east-1/missing")
            .unwrap_err();
        assert_eq!(
            (refused.code, refused.message.as_str()),
            (
                ErrorCode::AccessDenied,
                "Access to the resource http://localhost:9324/222222222222/missing is denied."
            ),
            "a queue that does not exist is refused as one that does"
        );
        let owner = caller("222222222222", "AKIDB");
        assert!(
            reached(&owner, Action::ReceiveMessage, shared),
            "its own account, where no statement denies"
        );
        assert!(
            !reached(&owner, Action::PurgeQueue, shared),
            "a deny binds the queue's own account too"
        );
        assert!(
            reached(&owner, Action::SendMessage, "222222222222/us-east-1/missing"),
            "its own account's queue without a policy"
        );
        assert!(
            reached(&test_context(), Action::PurgeQueue, shared),
            "without --credentials"
        );
    }

    #[test]
    fn action_names_round_trip() {
        assert_eq!(Action::ALL.len(), 23);
        for action in Action::ALL {
            assert_eq!(Action::from_name(action.name()), Some(*action));
            let single = action.name().strip_suffix("Batch").unwrap_or(action.name());
            assert_eq!(action.policy_name(), format!("sqs:{single}"));
        }
        assert_eq!(Action::from_name("Nope"), None);
    }
}
