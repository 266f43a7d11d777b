//! What the control surface keeps of its own ([`ControlApiState`]):
//! whether it is on, the faults its rules inject, and the virtual clock.

use std::sync::Arc;

use crate::http::call::faults;

/// What the control API keeps: whether it is on, the faults it injects
/// (none without it), and the clock it moves with `--clock virtual`.
pub struct ControlApiState {
    pub enabled: bool,
    pub faults: faults::Faults,
    pub virtual_clock: Option<Arc<crate::queue::clock::VirtualClock>>,
}
