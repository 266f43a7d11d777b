//! What the admin surface keeps of its own ([`AdminState`]): the
//! anti-forgery token, the activity it samples, where it is served, and the
//! pool its looks at queues run on.

use std::sync::Arc;

use super::activity::ActivityHistory;
use super::blocking_pool;

/// What the admin page needs beyond what every handler shares.
pub struct AdminState {
    /// The anti-forgery token every state-changing call must carry.
    pub csrf_token: String,
    pub activity: Arc<ActivityHistory>,
    /// The admin page and the other operational endpoints have their own
    /// address (`--admin-listen`).
    pub apart: bool,
    /// Where the page's queue URLs point when the page has an address of its
    /// own (`--admin-listen`) and no `--public-url` says: the SQS address
    /// (`--advertise-url`), not the page's.
    pub queue_base_url: Option<String>,
    /// Looks at queues (the page's browser, the developer endpoint, the
    /// snapshot), run off the runtime a few at a time.
    pub blocking_pool: blocking_pool::BlockingPool,
}

impl AdminState {
    pub fn new(activity: Arc<ActivityHistory>, apart: bool, queue_base_url: Option<String>) -> AdminState {
        AdminState {
            csrf_token: format!("{:032x}", crate::queue::random::uuid().as_u128()),
            activity,
            apart,
            queue_base_url,
            blocking_pool: Default::default(),
        }
    }
}
