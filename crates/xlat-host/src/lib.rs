//! Real-hardware tools (Linux x86-64): the TLB probe and the PT-Baker runtime.
//! Not built yet; see the open issues.
