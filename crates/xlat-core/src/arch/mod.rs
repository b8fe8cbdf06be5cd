//! The vocabulary floor: the types every part of the model speaks in (addresses and page
//! sizes, the page-table entry format and which entries coalesce, address-space contexts and
//! invalidations, the clocks periodic work runs on). It imports nothing of the model, so
//! translation, memory, timing, the OS and mechanisms can all import it without importing
//! each other.

pub mod addr;
pub mod clock;
pub mod coalesce;
pub mod ctx;
pub mod pte;
