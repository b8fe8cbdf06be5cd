#![no_main]
//! Any input must decode to references or to one SourceError, never a panic or a hang.
use libfuzzer_sys::fuzz_target;
use xlat_workloads::trace::{decode_bytes, FormatSpec};

fuzz_target!(|data: &[u8]| {
    let _ = decode_bytes(FormatSpec::parse("lackey"), data);
    let _ = decode_bytes(FormatSpec::parse("lackey+fetch"), data);
    if let Err(e) = decode_bytes(None, data) {
        assert!(!e.to_string().contains('\n'));
    }
});
