//! Host-speed machinery, none of it part of the model: SIMD key search (lanes), huge-page
//! backed storage (hostmem), host prefetching ahead of the run loop (prefetch) and the
//! two-thread pipeline (pipeline). A reader of the model can skip this folder.

pub mod hostmem;
pub mod lanes;
pub mod pipeline;
pub mod prefetch;
