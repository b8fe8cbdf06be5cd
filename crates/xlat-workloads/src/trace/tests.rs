use super::*;
use crate::rng::Rng;
use std::io::Write;
use std::sync::atomic::AtomicBool;
use xlat_core::os::OsOp;
use xlat_core::RefKind;

fn tmp(name: &str) -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!("xlat-wl-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn random_refs(n: usize, seed: u64) -> Vec<Ref> {
    let mut r = Rng::new(seed);
    let mut va = 0x7f00_0000_0000u64;
    (0..n)
        .map(|i| {
            va = match r.below(4) {
                0 => va.wrapping_add(8),
                1 => va.wrapping_sub(r.below(1 << 20)),
                2 => r.next_u64(),
                _ => va.wrapping_add(r.below(1 << 30)),
            };
            let kind = [RefKind::Load, RefKind::Store, RefKind::Fetch, RefKind::Prefetch][r.below(4) as usize];
            let size = if i % 3 == 0 { 8 } else { 1 + r.below(64) as u8 };
            let delta = match r.below(4) {
                0 => 1,
                1 => 0,
                2 => r.below(100) as u32,
                _ => r.next_u64() as u32,
            };
            let r0 = Ref::new(va, kind, size, delta, r.below(2) == 1);
            // (Some dependent on a producer further back: version 3's producer byte.)
            if r.below(4) == 0 {
                r0.after(1 + r.below(255) as u8)
            } else {
                r0
            }
        })
        .collect()
}

fn write_native(path: &Path, refs: &[Ref], hdr: &NativeHeader) {
    let mut w = NativeWriter::create(path, hdr).unwrap();
    for c in refs.chunks(1000) {
        w.write(c).unwrap();
    }
    assert_eq!(w.finish().unwrap(), refs.len() as u64);
}

fn read_all(src: &mut dyn RefSource, stream: usize, cap: usize) -> Result<Vec<Ref>, SourceError> {
    let mut all = Vec::new();
    let mut b = Vec::with_capacity(cap);
    loop {
        src.next_batch(stream, &mut b)?;
        if b.is_empty() {
            return Ok(all);
        }
        assert!(b.len() <= cap.max(1));
        all.extend_from_slice(&b);
    }
}

#[test]
fn native_roundtrip_with_header() {
    let refs = random_refs(100_000, 1);
    let p = tmp("a.xtr");
    let hdr = NativeHeader {
        stream: 0,
        streams: 1,
        regions: vec![Region { name: "table".into(), start: 0x7f00_0000_0000, len: 1 << 30, file: None }],
        desc: "gups:footprint=1G".into(),
    };
    write_native(&p, &refs, &hdr);
    let (desc, mut src) = crate::open_trace(&[p.to_string_lossy().into()], None).unwrap();
    assert_eq!(src.regions(), hdr.regions);
    assert!(desc.params.iter().any(|(k, v)| k == "workload" && v == "gups:footprint=1G"));
    assert_eq!(read_all(&mut *src, 0, 777).unwrap(), refs);
    // Compact: sequential 8-byte loads cost about 2 bytes each.
    let seq: Vec<Ref> = (0..100_000u64).map(|i| Ref::load(0x1000 + 8 * i, 1)).collect();
    let p2 = tmp("seq.xtr");
    write_native(&p2, &seq, &NativeHeader::default());
    assert!(std::fs::metadata(&p2).unwrap().len() < 20_000);
}

#[test]
fn native_traces_carry_os_calls() {
    use xlat_core::os::OsOp;
    // (Without producers further back than the previous reference and prefetches, which
    // version 1 lacks too.)
    let mut refs: Vec<Ref> = random_refs(1000, 3)
        .into_iter()
        .map(|r| if r.producer() > 1 { Ref { arg: 0, ..r } } else { r })
        .map(|r| if r.kind() == RefKind::Prefetch { Ref { flags: r.flags & !Ref::PREFETCH, ..r } } else { r })
        .collect();
    refs.insert(10, Ref::os_call(OsOp::Unmap, 0x7f00_0000_3000, 16, 1));
    refs.insert(500, Ref::os_call(OsOp::Migrate, 0x7f00_0010_0000, 65535, 40));
    refs.push(Ref::os_call(OsOp::Protect, 0x7f00_0020_0000, 1, 7));
    let p = tmp("calls.xtr");
    write_native(&p, &refs, &NativeHeader::default());
    let (_, mut src) = crate::open_trace(&[p.to_string_lossy().into()], None).unwrap();
    assert_eq!(read_all(&mut *src, 0, 333).unwrap(), refs);
    // An OS call in a version-1 file, an unknown operation and a zero page count are corrupt.
    let v1 = native::legacy_bytes(&NativeHeader::default(), 1, &refs);
    let e = decode_bytes(None, &v1).unwrap_err().to_string();
    assert!(e.contains("bad record tag 0x0b"), "{e}");
    for (bad, what) in
        [(Ref { size: 9, ..Ref::os_call(OsOp::Unmap, 0, 1, 1) }, "bad OS call operation 9"), (Ref::os_call(OsOp::Unmap, 0, 0, 1), "bad OS call page count 0")]
    {
        let p = tmp("badcall.xtr");
        write_native(&p, &[bad], &NativeHeader::default());
        let e = decode_bytes(None, &std::fs::read(&p).unwrap()).unwrap_err().to_string();
        assert!(e.contains(what), "{e}");
    }
}

#[test]
fn native_truncation_and_corruption_are_reported_with_offsets() {
    let refs = random_refs(20_000, 2);
    let p = tmp("t.xtr");
    write_native(&p, &refs, &NativeHeader::default());
    let data = std::fs::read(&p).unwrap();
    assert!(decode_bytes(FormatSpec::parse("native"), &[]).is_err());
    for cut in [5, 13, 20, 40, data.len() / 3, data.len() / 2, data.len() - 3, data.len() - 1] {
        let e = decode_bytes(None, &data[..cut]).unwrap_err();
        let msg = e.to_string();
        assert!(!msg.contains('\n'));
        match e {
            SourceError::Corrupt { .. } => assert!(msg.contains("byte offset"), "{msg}"),
            other => panic!("cut {cut}: {other}"),
        }
    }
    // A future version is refused by name.
    let mut v = data.clone();
    v[8] = 9;
    let e = decode_bytes(None, &v).unwrap_err().to_string();
    assert!(e.contains("version 9"), "{e}");
    // Full file decodes.
    assert_eq!(decode_bytes(None, &data).unwrap(), 20_000);
}

/// The byte offset and payload length of each block of a version-5 file.
fn blocks_of(data: &[u8]) -> Vec<(usize, usize)> {
    let u32_at = |i: usize| u32::from_le_bytes(data[i..i + 4].try_into().unwrap()) as usize;
    let (mut at, mut out) = (u32_at(10), Vec::new());
    while at < data.len() {
        out.push((at, u32_at(at)));
        at += 16 + u32_at(at);
    }
    assert_eq!(at, data.len());
    out
}

/// A version-5 file of `n` random references, in several blocks.
fn blocked_trace(n: usize) -> (Vec<Ref>, Vec<u8>) {
    let refs = random_refs(n, 5);
    let p = tmp("blocks.xtr");
    write_native(&p, &refs, &NativeHeader { desc: "blocks".into(), ..NativeHeader::default() });
    (refs, std::fs::read(&p).unwrap())
}

#[test]
fn native_v5_round_trips_in_checked_blocks() {
    let (refs, data) = blocked_trace(200_000);
    assert_eq!(u16::from_le_bytes([data[8], data[9]]), VERSION);
    assert_eq!(VERSION, 5);
    let blocks = blocks_of(&data);
    assert!(blocks.len() >= 3, "{} blocks", blocks.len());
    // Each block's header counts its records; together they are the trace (the last block
    // also holds the end marker).
    let counted: usize = blocks.iter().map(|&(at, _)| u32::from_le_bytes(data[at + 8..at + 12].try_into().unwrap()) as usize).sum();
    assert_eq!(counted, refs.len());
    assert_eq!(decode_all(None, &data).unwrap(), refs);
    // An empty trace is one block holding the end marker.
    let p = tmp("empty.xtr");
    write_native(&p, &[], &NativeHeader::default());
    let empty = std::fs::read(&p).unwrap();
    assert_eq!(blocks_of(&empty).len(), 1);
    assert_eq!(decode_bytes(None, &empty).unwrap(), 0);
}

#[test]
fn a_corrupt_block_is_one_error_naming_it() {
    let (refs, data) = blocked_trace(200_000);
    let blocks = blocks_of(&data);
    let (at, plen) = blocks[1];
    // Every byte of block 1's header and a spread of its payload: one line naming block 1 and
    // its offset, after block 0's references.
    for i in (0..16).chain((16..16 + plen).step_by(plen / 50 + 1)) {
        let mut bad = data.clone();
        bad[at + i] ^= 0x10;
        let p = tmp("bad.xtr");
        std::fs::write(&p, &bad).unwrap();
        let (_, mut src) = crate::open_trace(&[p.to_string_lossy().into()], None).unwrap();
        let mut got = Vec::new();
        let mut b = Vec::with_capacity(4096);
        let e = loop {
            match src.next_batch(0, &mut b) {
                Ok(()) if b.is_empty() => panic!("byte {i} of block 1 flipped, yet the trace read"),
                Ok(()) => got.extend_from_slice(&b),
                Err(e) => break e,
            }
        };
        let msg = e.to_string();
        assert!(!msg.contains('\n') && msg.contains("block 1: "), "byte {i}: {msg}");
        assert!(matches!(e, SourceError::Corrupt { offset, .. } if offset == at as u64), "byte {i}: {msg}");
        if i >= 12 {
            assert!(msg.contains("checksum mismatch"), "byte {i}: {msg}");
        }
        assert_eq!(got, refs[..got.len()]);
    }
    // A block whose records are not the count its header gives (checksum made to match).
    let (at0, plen0) = blocks[0];
    let mut bad = data.clone();
    let n = u32::from_le_bytes(bad[at0 + 8..at0 + 12].try_into().unwrap());
    bad[at0 + 8..at0 + 12].copy_from_slice(&(n + 1).to_le_bytes());
    let mut h = crc32fast::Hasher::new();
    h.update(&bad[at0..at0 + 12]);
    h.update(&bad[at0 + 16..at0 + 16 + plen0]);
    bad[at0 + 12..at0 + 16].copy_from_slice(&h.finalize().to_le_bytes());
    let e = decode_bytes(None, &bad).unwrap_err().to_string();
    assert!(e.contains(&format!("block 0: holds {n} records, its header says {}", n + 1)), "{e}");
}

#[test]
fn version_4_files_still_read_unchecked() {
    let refs = random_refs(50_000, 6);
    let hdr = NativeHeader { stream: 1, streams: 2, regions: Vec::new(), desc: "old".into() };
    let v4 = native::legacy_bytes(&hdr, 4, &refs);
    assert_eq!(decode_all(None, &v4).unwrap(), refs);
    let p = tmp("old.1.xtr");
    std::fs::write(&p, &v4).unwrap();
    let (desc, mut src) = crate::open_trace(&[p.to_string_lossy().into()], None).unwrap();
    assert!(desc.params.iter().any(|(k, v)| k == "workload" && v == "old"));
    assert_eq!(read_all(&mut *src, 0, 1000).unwrap(), refs);
    // The version is there for a note that such a file has no checksums.
    assert_eq!(native_version(&p.to_string_lossy()), Some(4));
    let p5 = tmp("new.xtr");
    write_native(&p5, &refs[..10], &NativeHeader::default());
    assert_eq!(native_version(&p5.to_string_lossy()), Some(VERSION));
    let gz = tmp("old.xtr.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(&v4).unwrap();
    std::fs::write(&gz, enc.finish().unwrap()).unwrap();
    assert_eq!(native_version(&gz.to_string_lossy()), Some(4));
    let cs = tmp("t.champsim");
    std::fs::write(&cs, champsim_sample()).unwrap();
    assert_eq!(native_version(&cs.to_string_lossy()), None);
    // Truncated in its stream, a version-4 file is still reported, with its offset.
    let e = decode_bytes(None, &v4[..v4.len() - 5]).unwrap_err().to_string();
    assert!(e.contains("decompressed record stream") && !e.contains("block"), "{e}");
}

#[test]
fn truncation_inside_a_block_is_detected() {
    let (_, data) = blocked_trace(200_000);
    let blocks = blocks_of(&data);
    let (at, plen) = blocks[1];
    let cases = [
        (at + 16 + plen / 2, format!("block 1: truncated: the file ends {} bytes into its {plen}-byte payload", plen / 2)),
        (at + 7, String::from("block 1: truncated block header (7 of 16 bytes)")),
        (at, String::from("truncated trace: no end marker (the file ends after block 0)")),
        (data.len() - 1, format!("block {}: truncated", blocks.len() - 1)),
    ];
    for (cut, want) in cases {
        let e = decode_bytes(None, &data[..cut]).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains(&want) && !msg.contains('\n'), "cut at {cut}: {msg}");
        assert!(matches!(e, SourceError::Corrupt { .. }), "{msg}");
    }
}

fn champsim_record(ip: u64, srcs: [u64; 4], dsts: [u64; 2], branch: bool) -> [u8; 64] {
    let mut r = [0u8; 64];
    r[..8].copy_from_slice(&ip.to_le_bytes());
    r[8] = branch as u8;
    r[9] = branch as u8;
    for (i, d) in dsts.iter().enumerate() {
        r[16 + 8 * i..24 + 8 * i].copy_from_slice(&d.to_le_bytes());
    }
    for (i, s) in srcs.iter().enumerate() {
        r[32 + 8 * i..40 + 8 * i].copy_from_slice(&s.to_le_bytes());
    }
    r
}

fn champsim_sample() -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&champsim_record(0x400000, [0; 4], [0; 2], false));
    v.extend_from_slice(&champsim_record(0x400004, [0x1000, 0, 0x1000, 0x2000], [0; 2], false));
    v.extend_from_slice(&champsim_record(0x400008, [0; 4], [0x3000, 0], true));
    v.extend_from_slice(&champsim_record(0x40000c, [0x4000, 0, 0, 0], [0x4000, 0], false));
    v
}

#[test]
fn champsim_raw_gz_xz() {
    let raw = champsim_sample();
    let check = |refs: &[Ref]| {
        let got: Vec<(u64, RefKind, u32)> = refs.iter().map(|r| (r.va, r.kind(), r.inst_delta)).collect();
        assert_eq!(
            got,
            vec![(0x1000, RefKind::Load, 2), (0x2000, RefKind::Load, 0), (0x3000, RefKind::Store, 1), (0x4000, RefKind::Load, 1), (0x4000, RefKind::Store, 0),]
        );
    };
    check(&decode_all(None, &raw).unwrap());
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&raw).unwrap();
    let gz = gz.finish().unwrap();
    check(&decode_all(None, &gz).unwrap());
    let mut xz = xz2::write::XzEncoder::new(Vec::new(), 6);
    xz.write_all(&raw).unwrap();
    let xz = xz.finish().unwrap();
    check(&decode_all(None, &xz).unwrap());
    // Instructions after the last memory operand end the stream as a tail: counted, no access.
    let mut tailed = raw.clone();
    tailed.extend_from_slice(&champsim_record(0x400010, [0; 4], [0; 2], false));
    tailed.extend_from_slice(&champsim_record(0x400014, [0; 4], [0; 2], true));
    let t = decode_all(None, &tailed).unwrap();
    assert_eq!(t.len(), 6);
    assert_eq!((t[5], t.iter().map(|r| r.inst_delta as u64).sum::<u64>()), (Ref::tail(2), 6));
    // Fetches on request: one per instruction, carrying the delta.
    let f = decode_all(FormatSpec::parse("champsim+fetch"), &raw).unwrap();
    assert_eq!(f.iter().filter(|r| r.kind() == RefKind::Fetch).count(), 4);
    assert_eq!(f.iter().map(|r| r.inst_delta as u64).sum::<u64>(), 4);
    // Truncated (raw and compressed) and non-ChampSim content.
    let e = decode_bytes(None, &raw[..100]).unwrap_err().to_string();
    assert!(e.contains("byte offset 64"), "{e}");
    assert!(decode_bytes(None, &xz[..xz.len() - 10]).is_err());
    assert!(decode_bytes(None, &gz[..gz.len() / 2]).is_err());
    let mut bad = raw.clone();
    bad[64 + 8] = 7;
    let e = decode_bytes(None, &bad).unwrap_err().to_string();
    assert!(e.contains("byte offset 64") && e.contains("is_branch=7"), "{e}");
}

/// A ChampSim record with registers: `dst`/`src` register numbers (0 = unused).
fn champsim_regs(ip: u64, srcs: [u64; 4], dsts: [u64; 2], dst_regs: [u8; 2], src_regs: [u8; 4]) -> [u8; 64] {
    let mut r = champsim_record(ip, srcs, dsts, false);
    r[10..12].copy_from_slice(&dst_regs);
    r[12..16].copy_from_slice(&src_regs);
    r
}

/// Register dependences, as ChampSim keeps them (spec'd in the decoder's module comment):
/// a list walk `p = p->next; sum += p->val` with a register copy in between.
#[test]
fn champsim_loads_depend_on_the_loads_their_registers_came_from() {
    const P: u8 = 1;
    const Q: u8 = 2;
    const SUM: u8 = 3;
    let mut v = Vec::new();
    for i in 0..3u64 {
        let node = 0x10_0000 + i * 0x1000;
        // mov p <- [p]      (p->next: its address came from the previous p->next)
        v.extend_from_slice(&champsim_regs(0x400000, [node, 0, 0, 0], [0; 2], [P, 0], [P, 0, 0, 0]));
        // mov q <- p        (a register copy: q comes from the same load)
        v.extend_from_slice(&champsim_regs(0x400004, [0; 4], [0; 2], [Q, 0], [P, 0, 0, 0]));
        // add sum <- [q+8]  (p->val, through q)
        v.extend_from_slice(&champsim_regs(0x400008, [node + 8, 0, 0, 0], [0; 2], [SUM, 0], [Q, SUM, 0, 0]));
        // store [0x9000] <- sum, and an unrelated load of a constant address
        v.extend_from_slice(&champsim_regs(0x40000c, [0x8000, 0, 0, 0], [0x9000, 0], [0; 2], [SUM, 0, 0, 0]));
    }
    let refs = decode_all(None, &v).unwrap();
    let got: Vec<(RefKind, u8)> = refs.iter().map(|r| (r.kind(), r.producer())).collect();
    use RefKind::*;
    assert_eq!(
        got,
        vec![
            // Round 1: p came from nowhere; p->val from p->next (1 back); the last load reads
            // sum (from p->val, 1 back), the store depends on nothing (stores never wait).
            (Load, 0),
            (Load, 1),
            (Load, 1),
            (Store, 0),
            // Round 2: p->next's p is four references back (the previous p->next).
            (Load, 4),
            (Load, 1),
            (Load, 1),
            (Store, 0),
            (Load, 4),
            (Load, 1),
            (Load, 1),
            (Store, 0),
        ]
    );
    // With fetches, which are references too, the distances count them.
    let f = decode_all(FormatSpec::parse("champsim+fetch"), &v).unwrap();
    assert_eq!(f.iter().filter(|r| r.kind() == Load).map(|r| r.producer()).collect::<Vec<_>>(), vec![0, 3, 2, 8, 3, 2, 8, 3, 2]);
}

const LACKEY: &str = concat!(
    "==123== Lackey, an example Valgrind tool\n",
    "I  04010173,3\n",
    " S 7ff000398,8\n",
    "I  04010176,5\n",
    "I  0401017b,2\n",
    " L 04222cac,8\n",
    " M 0421d4e0,4\n",
    "I  04010180,7\n",
    " L 0421d4e8,128\n",
    "==123== \n",
);

#[test]
fn lackey_parses_and_counts_instructions() {
    let refs = decode_all(None, LACKEY.as_bytes()).unwrap();
    let got: Vec<(u64, RefKind, u8, u32)> = refs.iter().map(|r| (r.va, r.kind(), r.size, r.inst_delta)).collect();
    assert_eq!(
        got,
        vec![
            (0x7ff000398, RefKind::Store, 8, 1),
            (0x4222cac, RefKind::Load, 8, 2),
            (0x421d4e0, RefKind::Load, 4, 0),
            (0x421d4e0, RefKind::Store, 4, 0),
            (0x421d4e8, RefKind::Load, 64, 1),
            (0x421d528, RefKind::Load, 64, 0),
        ]
    );
    let f = decode_all(FormatSpec::parse("lackey+fetch"), LACKEY.as_bytes()).unwrap();
    assert_eq!(f.iter().filter(|r| r.kind() == RefKind::Fetch).count(), 4);
    // An instruction after the last data access is a tail of one instruction.
    let tailed = format!("{LACKEY}I  04222cb0,3\n");
    let t = decode_all(None, tailed.as_bytes()).unwrap();
    assert_eq!((t.len(), t[t.len() - 1]), (got.len() + 1, Ref::tail(1)));
    let bad = format!("{LACKEY} X 1234,8\n");
    let e = decode_bytes(None, bad.as_bytes()).unwrap_err();
    match e {
        SourceError::Corrupt { offset, .. } => assert_eq!(offset as usize, LACKEY.len()),
        other => panic!("{other}"),
    }
    // Forcing the wrong format on a lackey file fails cleanly.
    assert!(decode_bytes(FormatSpec::parse("native"), LACKEY.as_bytes()).is_err());
}

/// xlat's valgrind tool adds the system calls that change mappings: each becomes OS calls over
/// the pages its range covers (a range not page-aligned covers the pages it touches; one of
/// more than 65,535 pages is split), after the instructions before it.
#[test]
fn lackey_system_calls_become_os_calls() {
    let text = format!(
        "{LACKEY}I  04010184,3\nI  04010187,2\n U 7f0000001800,8192\n F 7f0000100000,4096\n P 7f0000200000,4096\n W 7f0000200000,4096\n U 100000000,{}\n",
        (u64::from(u16::MAX) + 2) * 4096
    );
    let refs = decode_all(None, text.as_bytes()).unwrap();
    let calls: Vec<(OsOp, u64, u16, u32)> =
        refs.iter().filter(|r| r.is_os_call()).map(|r| (OsOp::from_code(r.size).unwrap(), r.va, r.pages(), r.inst_delta)).collect();
    assert_eq!(
        calls,
        [
            (OsOp::Unmap, 0x7f00_0000_1000, 3, 2),
            (OsOp::Free, 0x7f00_0010_0000, 1, 0),
            (OsOp::Protect, 0x7f00_0020_0000, 1, 0),
            (OsOp::Unprotect, 0x7f00_0020_0000, 1, 0),
            (OsOp::Unmap, 0x1_0000_0000, u16::MAX, 0),
            (OsOp::Unmap, 0x1_0000_0000 + (u64::from(u16::MAX) << 12), 2, 0),
        ]
    );
    // A length too long for any address space is a bad line, not a panic.
    assert!(decode_bytes(None, format!("{LACKEY} U 1000,123456789012345678901\n").as_bytes()).is_err());
}

#[test]
fn garbage_never_panics() {
    let refs = random_refs(3000, 3);
    let p = tmp("g.xtr");
    write_native(&p, &refs, &NativeHeader::default());
    let native = std::fs::read(&p).unwrap();
    let seeds: Vec<Vec<u8>> = vec![native, champsim_sample(), LACKEY.as_bytes().to_vec()];
    let formats = [None, FormatSpec::parse("native"), FormatSpec::parse("champsim"), FormatSpec::parse("lackey+fetch")];
    let mut rng = Rng::new(4);
    for round in 0..600 {
        let base = &seeds[round % seeds.len()];
        let mut d = base.clone();
        match round % 4 {
            0 => d.truncate(rng.below(d.len() as u64 + 1) as usize),
            1 => {
                for _ in 0..1 + rng.below(8) {
                    let i = rng.below(d.len() as u64) as usize;
                    d[i] ^= 1 << rng.below(8);
                }
            }
            2 => d = (0..rng.below(3000)).map(|_| rng.next_u64() as u8).collect(),
            _ => {
                let keep = 8.min(d.len());
                d.truncate(keep);
                d.extend((0..rng.below(500)).map(|_| rng.next_u64() as u8));
            }
        }
        for f in formats {
            if let Err(e) = decode_bytes(f, &d) {
                assert!(!e.to_string().contains('\n'));
            }
        }
    }
}

#[test]
fn detection_by_content_and_suffix() {
    let p = tmp("x.champsimtrace");
    std::fs::write(&p, champsim_sample()).unwrap();
    let (d, _) = crate::open_trace(&[p.to_string_lossy().into()], None).unwrap();
    assert_eq!(d.params[0].1, "champsim");
    let p = tmp("y.out");
    std::fs::write(&p, LACKEY).unwrap();
    let (d, _) = crate::open_trace(&[p.to_string_lossy().into()], None).unwrap();
    assert_eq!(d.params[0].1, "lackey");
    assert!(crate::open_trace(&[p.to_string_lossy().into()], Some("bogus")).is_err());
    let e = crate::open_trace(&["/nonexistent/t.xtr".into()], None).err().unwrap().to_string();
    assert!(e.contains("/nonexistent/t.xtr"), "{e}");
}

#[test]
fn record_kernel_and_read_back_identically() {
    let spec = "bfs:scale=10,threads=2";
    let (_, mut src) = crate::open(spec, 5).unwrap();
    let p = tmp("bfs.xtr");
    let n = record_with_desc(&mut *src, &p, None, spec).unwrap();
    drop(src);
    let paths: Vec<String> = stream_paths(&p, 2).iter().map(|x| x.to_string_lossy().into()).collect();
    let (_, mut tr) = crate::open_trace(&paths, None).unwrap();
    let (_, mut again) = crate::open(spec, 5).unwrap();
    let mut total = 0;
    for s in 0..2 {
        let a = read_all(&mut *tr, s, 4096).unwrap();
        let b = read_all(&mut *again, s, 16384).unwrap();
        assert_eq!(a, b);
        total += a.len() as u64;
    }
    assert_eq!(total, n);
    assert!(!tr.regions().is_empty());
    // The limit stops the recording exactly.
    let (_, mut src) = crate::open(spec, 5).unwrap();
    assert_eq!(record(&mut *src, &tmp("lim.xtr"), Some(12345)).unwrap(), 12345);
}

/// A FIFO written a line at a time, as valgrind's lackey writes it (and with pauses, so that
/// the reader finds it empty and waits for it to fill), converts to the same trace as the
/// file it came from.
#[test]
fn lackey_through_a_fifo() {
    let fifo = tmp("fifo");
    let ok = std::process::Command::new("mkfifo").arg(&fifo).status().map(|s| s.success()).unwrap_or(false);
    if !ok {
        eprintln!("mkfifo unavailable; skipping");
        return;
    }
    let text = LACKEY.repeat(1000);
    let file = tmp("lackey.txt");
    std::fs::write(&file, &text).unwrap();
    let f2 = fifo.clone();
    let writer = std::thread::spawn(move || {
        let mut f = std::fs::OpenOptions::new().write(true).open(&f2).unwrap();
        for (i, line) in text.split_inclusive('\n').enumerate() {
            f.write_all(line.as_bytes()).unwrap();
            if i % 2000 == 0 {
                std::thread::sleep(std::time::Duration::from_millis(3));
            }
        }
    });
    // (One description for both, so that the files can be compared whole.)
    let opts = LackeyOptions { desc: Some("lackey".into()), ..LackeyOptions::default() };
    let out = tmp("conv.xtr");
    let n = lackey_to_native_until(&fifo, &out, &opts, &AtomicBool::new(false)).unwrap();
    writer.join().unwrap();
    assert_eq!(n, 6000);
    assert_eq!(decode_bytes(None, &std::fs::read(&out).unwrap()).unwrap(), 6000);
    let from_file = tmp("file.xtr");
    assert_eq!(lackey_to_native_until(&file, &from_file, &opts, &AtomicBool::new(false)).unwrap(), 6000);
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&from_file).unwrap());
}

/// Every format under every compression, with a name that says nothing (or the wrong thing),
/// is read by its content.
#[test]
fn every_format_and_compression_is_detected_by_content() {
    let native_path = tmp("n.xtr");
    let refs = random_refs(500, 3);
    write_native(&native_path, &refs, &NativeHeader { stream: 0, streams: 1, regions: Vec::new(), desc: String::new() });
    let native = std::fs::read(&native_path).unwrap();
    let gz = |raw: &[u8]| {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(raw).unwrap();
        e.finish().unwrap()
    };
    let xz = |raw: &[u8]| {
        let mut e = xz2::write::XzEncoder::new(Vec::new(), 6);
        e.write_all(raw).unwrap();
        e.finish().unwrap()
    };
    let zst = |raw: &[u8]| zstd::encode_all(raw, 3).unwrap();
    let cases: [(&str, Vec<u8>); 3] = [("native", native), ("champsim", champsim_sample()), ("lackey", LACKEY.as_bytes().to_vec())];
    for (format, raw) in cases {
        for (codec, data) in [("raw", raw.clone()), ("gz", gz(&raw)), ("xz", xz(&raw)), ("zstd", zst(&raw))] {
            // A misleading name: the content decides.
            let p = tmp("misleading.log.gz");
            std::fs::write(&p, &data).unwrap();
            let (d, _) = crate::open_trace(&[p.to_string_lossy().into()], None).unwrap_or_else(|e| panic!("{format}/{codec}: {e}"));
            assert_eq!(d.params[0].1, format, "{format}/{codec}");
            assert!(decode_bytes(None, &data).unwrap() > 0, "{format}/{codec}");
        }
    }
}

/// A forced format the content contradicts, and a file that is no trace, are one error naming
/// the file, the byte offset and the likely cause.
#[test]
fn wrong_formats_name_the_file_the_offset_and_the_cause() {
    let native_path = tmp("t.xtr");
    write_native(&native_path, &random_refs(100, 4), &NativeHeader { stream: 0, streams: 1, regions: Vec::new(), desc: String::new() });
    let np: String = native_path.to_string_lossy().into();
    let e = crate::open_trace(std::slice::from_ref(&np), Some("champsim")).err().unwrap().to_string();
    assert!(e.contains(&np) && e.contains("byte offset 0") && e.contains("native trace"), "{e}");
    let e = crate::open_trace(std::slice::from_ref(&np), Some("lackey")).err().unwrap().to_string();
    assert!(e.contains(&np) && e.contains("native trace"), "{e}");

    let cs = tmp("t.champsim");
    std::fs::write(&cs, champsim_sample()).unwrap();
    let cp: String = cs.to_string_lossy().into();
    let e = crate::open_trace(std::slice::from_ref(&cp), Some("native")).err().unwrap().to_string();
    assert!(e.contains(&cp) && e.contains("byte offset 0") && e.contains("magic"), "{e}");
    let e = crate::open_trace(std::slice::from_ref(&cp), Some("lackey")).err().unwrap().to_string();
    assert!(e.contains(&cp) && e.contains("not a text log"), "{e}");

    // Random bytes read as ChampSim: the first record is refused with its offset, not turned
    // into addresses the engine then rejects without a file name.
    let mut r = Rng::new(9);
    let noise: Vec<u8> = (0..4096).map(|_| r.next_u64() as u8 | 2).collect();
    let p = tmp("noise.bin");
    std::fs::write(&p, &noise).unwrap();
    let pp: String = p.to_string_lossy().into();
    let (_, mut src) = crate::open_trace(std::slice::from_ref(&pp), Some("champsim")).unwrap();
    let e = read_all(&mut *src, 0, 64).unwrap_err().to_string();
    assert!(e.contains(&pp) && e.contains("byte offset 0") && e.contains("not a ChampSim"), "{e}");

    // Text that is no lackey log.
    let p = tmp("notes.md");
    std::fs::write(&p, "# just some notes\nnothing to see\n").unwrap();
    let e = crate::open_trace(&[p.to_string_lossy().into()], None).err().unwrap().to_string();
    assert!(e.contains("not a valgrind lackey log") && e.contains("byte offset 0"), "{e}");
    // Text whose suffix says lackey, read as ChampSim: it only looks like a lackey log.
    let p = tmp("notes.txt");
    std::fs::write(&p, "hello world\n").unwrap();
    let e = crate::open_trace(&[p.to_string_lossy().into()], Some("champsim")).err().unwrap().to_string();
    assert!(e.contains("--trace-format champsim, but the file looks like a valgrind lackey log"), "{e}");
}

/// Version 3 carries a producer further back than the previous reference (a byte after the
/// size); a version-2 file with that bit is corrupt, and version-2 files read as before.
#[test]
fn native_producers_round_trip_and_need_version_3() {
    let refs = vec![Ref::load(0x1000, 1), Ref::load(0x2000, 1), Ref::load(0x3000, 1).after(2), Ref::load(0x4000, 1).after(1)];
    let p = tmp("prod.xtr");
    write_native(&p, &refs, &NativeHeader::default());
    let (_, mut src) = crate::open_trace(&[p.to_string_lossy().into()], None).unwrap();
    let got = read_all(&mut *src, 0, 16).unwrap();
    assert_eq!(got.iter().map(|r| r.producer()).collect::<Vec<_>>(), vec![0, 0, 2, 1]);
    let v2 = native::legacy_bytes(&NativeHeader::default(), 2, &refs);
    let e = decode_bytes(None, &v2).unwrap_err().to_string();
    assert!(e.contains("bad record tag 0x24"), "{e}");
}

/// Version 4 marks a software prefetch (tag bit 6, on a load's kind); a version-3 file with
/// that bit is corrupt.
#[test]
fn native_prefetches_round_trip_and_need_version_4() {
    let refs = vec![Ref::load(0x1000, 1), Ref::prefetch(0x9000, 3), Ref::store(0x2000, 1)];
    let p = tmp("pf.xtr");
    write_native(&p, &refs, &NativeHeader::default());
    let (_, mut src) = crate::open_trace(&[p.to_string_lossy().into()], None).unwrap();
    let got = read_all(&mut *src, 0, 16).unwrap();
    assert_eq!(got, refs);
    assert_eq!(got[1].kind(), RefKind::Prefetch);
    let v3 = native::legacy_bytes(&NativeHeader::default(), 3, &refs);
    let e = decode_bytes(None, &v3).unwrap_err().to_string();
    assert!(e.contains("bad record tag 0x58"), "{e}");
}

/// Names in a trace-cache directory.
fn cache_files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir).map(|rd| rd.map(|d| d.unwrap().file_name().to_string_lossy().into_owned()).collect()).unwrap_or_default();
    v.sort();
    v
}

/// References a ChampSim trace holds in few records: at most 3 instructions apart.
fn close_refs(n: usize, seed: u64) -> Vec<Ref> {
    random_refs(n, seed).into_iter().map(|r| Ref::new((r.va & ((1 << 46) - 1)) | 0x1000, r.kind(), r.size, r.inst_delta % 4, false)).collect()
}

/// Every reference of stream 0.
fn drain(src: &mut TraceSource) -> Vec<Ref> {
    let (mut all, mut b) = (Vec::new(), Vec::with_capacity(4096));
    loop {
        src.next_batch(0, &mut b).unwrap();
        if b.is_empty() {
            return all;
        }
        all.extend_from_slice(&b);
    }
}

fn open_cached(paths: &[String], forced: Option<FormatSpec>, dir: &Path) -> TraceSource {
    TraceSource::open_inner(paths, forced, Some(dir), &AtomicBool::new(false)).unwrap()
}

#[test]
fn the_trace_cache_serves_the_same_references_from_a_native_copy() {
    // A ChampSim trace (xz) and a lackey log (gzip), each read directly and through the cache.
    let cs = tmp("t.champsim.xz");
    let mut w = ChampSimWriter::create(&cs).unwrap();
    w.write(&close_refs(20_000, 11)).unwrap();
    w.finish().unwrap();
    let lk = tmp("t.lackey.gz");
    let mut gz = flate2::write::GzEncoder::new(File::create(&lk).unwrap(), flate2::Compression::fast());
    for _ in 0..500 {
        gz.write_all(LACKEY.as_bytes()).unwrap();
    }
    gz.finish().unwrap();
    let dir = tmp("cache");
    for (path, forced) in [(&cs, None), (&cs, FormatSpec::parse("champsim+fetch")), (&lk, None), (&lk, FormatSpec::parse("lackey+fetch"))] {
        let p = vec![path.to_string_lossy().into_owned()];
        let mut direct = TraceSource::open_direct(&p, forced).unwrap();
        let mut cached = open_cached(&p, forced, &dir);
        assert!(cached.copies[0].is_some(), "{p:?} {forced:?} read its copy");
        assert_eq!(cached.desc(), direct.desc(), "the copy is described as the original");
        let (a, b) = (drain(&mut direct), drain(&mut cached));
        assert!(a.len() >= 3000);
        assert_eq!(a, b, "{p:?} {forced:?}");
        // Regions from pages read the copy and agree.
        let (mut d2, mut c2) = (TraceSource::open_direct(&p, forced).unwrap(), open_cached(&p, forced, &dir));
        d2.regions_from_pages(&p, forced, 4096).unwrap();
        c2.regions_from_pages(&p, forced, 4096).unwrap();
        assert_eq!(d2.regions(), c2.regions());
    }
    // One copy per (content, format read as): +fetch is a copy of its own.
    let entries = cache::entries(&dir).unwrap();
    assert_eq!(entries.len(), 4);
    assert_eq!(entries.iter().map(|e| e.format.as_str()).filter(|f| f.ends_with("+fetch")).count(), 2);
    assert!(entries.iter().all(|e| e.refs > 0 && e.bytes == std::fs::metadata(&e.copy).unwrap().len()));
    // A second lookup serves the copy; a native trace needs none.
    let cs_s = cs.to_string_lossy().into_owned();
    let (e, made) = cache::native_copy(&dir, &cs_s, FormatSpec { format: Format::ChampSim, fetch: false }, &AtomicBool::new(false)).unwrap();
    assert!(!made);
    let native = open_cached(&[e.copy.to_string_lossy().into_owned()], None, &dir);
    assert!(native.copies[0].is_none());
    assert_eq!(cache_files(&dir).len(), 8, "{:?}", cache_files(&dir));
}

#[test]
fn the_trace_cache_never_serves_a_stale_or_partial_copy() {
    let cs = tmp("s.champsim");
    let write = |seed| {
        let mut w = ChampSimWriter::create(&cs).unwrap();
        w.write(&close_refs(5000, seed)).unwrap();
        w.finish().unwrap();
    };
    write(1);
    let dir = tmp("cache");
    let p = vec![cs.to_string_lossy().into_owned()];
    let champsim = FormatSpec { format: Format::ChampSim, fetch: false };
    let never = AtomicBool::new(false);
    let (first, made) = cache::native_copy(&dir, &p[0], champsim, &never).unwrap();
    assert!(made);
    // The same name with other content: another key, so the old copy is not served.
    write(2);
    let mut cached = open_cached(&p, None, &dir);
    assert_ne!(cached.copies[0].as_deref(), Some(first.copy.as_path()));
    assert_eq!(drain(&mut cached), drain(&mut TraceSource::open_direct(&p, None).unwrap()));
    // A copy whose size is not its entry's (cut short, or being replaced) is made again.
    let (e, _) = cache::native_copy(&dir, &p[0], champsim, &never).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&e.copy).unwrap();
    f.set_len(e.bytes / 2).unwrap();
    let (again, made) = cache::native_copy(&dir, &p[0], champsim, &never).unwrap();
    assert!(made);
    assert_eq!(again.bytes, e.bytes);
    // A corrupt input fails naming the input, and leaves nothing behind; so does an interrupt.
    let before = cache_files(&dir);
    let bad = tmp("bad.champsim");
    std::fs::write(&bad, &std::fs::read(&cs).unwrap()[..64 * 100 + 17]).unwrap();
    let bad_s = bad.to_string_lossy().into_owned();
    let err = TraceSource::open_inner(std::slice::from_ref(&bad_s), None, Some(&dir), &never).err().unwrap().to_string();
    assert!(err.contains(&bad_s), "{err}");
    write(3);
    let err = cache::native_copy(&dir, &p[0], champsim, &AtomicBool::new(true)).err().unwrap().to_string();
    assert!(err.contains("interrupted"), "{err}");
    assert_eq!(cache_files(&dir), before);
    // Clearing removes the cache's files and only those.
    std::fs::write(dir.join("notes.txt"), "mine").unwrap();
    let (files, bytes) = cache::clear(&dir).unwrap();
    assert_eq!((files as usize, bytes > 0), (before.len(), true));
    assert_eq!(cache_files(&dir), vec!["notes.txt".to_string()]);
}

/// A trace whose sidecar (as `xlat trace` writes it) names files and the executable's
/// segments: its regions are file mappings even without prefaulting, and relinking with
/// `max-page-size` 4 KB moves the code a page (and the references into it), while 2 MB puts
/// it in phase with its file offset; a sidecar without segments cannot be relinked.
#[test]
fn sidecars_give_file_regions_and_relink_the_executable() {
    let code = 0x20_7900u64; // in the code segment, which starts at 0x206800
    let refs = vec![Ref::new(code, RefKind::Fetch, 4, 1, false), Ref::load(0x20_0010, 1), Ref::load(0x7f00_0000_0000, 1)];
    let p = tmp("relink.xtr");
    write_native(&p, &refs, &NativeHeader::default());
    let side = format!("{}.maps", p.to_string_lossy());
    let maps = "\
00200000-00206000 r--p 00000000 08:02 7 /bin/prog
00206000-00507000 r-xp 00006000 08:02 7 /bin/prog
7f0000000000-7f0000100000 rw-p 00000000 00:00 0
# file-size 3176448 /bin/prog
";
    std::fs::write(&side, maps).unwrap();
    let paths = [p.to_string_lossy().into_owned()];
    let (_, mut src) = crate::open_trace(&paths, None).unwrap();
    let regions = src.regions();
    assert_eq!(regions.len(), 3, "{regions:?}");
    assert_eq!(regions[1].file, Some(xlat_core::FileMap { offset: 0x6000, size: 3176448, exec: true, writable: false }));
    assert_eq!(read_all(&mut *src, 0, 10).unwrap(), refs, "as linked");
    let e = crate::open_trace_until(
        &paths,
        None,
        None,
        crate::trace::Layout { max_page: Some(4096), library_align: 4096, fast_forward: false },
        &AtomicBool::new(false),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("needs the executable's loadable segments"), "{e}");
    std::fs::write(&side, format!("{maps}# elf-load 0 200000 6800 6800 4 /bin/prog\n# elf-load 6800 206800 300000 300000 5 /bin/prog\n")).unwrap();
    for (m, moved) in [(4096u64, 0x20_8900u64), (2 << 20, 0x40_7900)] {
        let (_, mut src) = crate::open_trace_until(
            &paths,
            None,
            None,
            crate::trace::Layout { max_page: Some(m), library_align: 4096, fast_forward: false },
            &AtomicBool::new(false),
        )
        .unwrap();
        let got = read_all(&mut *src, 0, 10).unwrap();
        assert_eq!(got[0].va, moved, "max-page-size {m:#x}");
        assert_eq!((got[1].va, got[2].va), (0x20_0010, 0x7f00_0000_0000), "rodata and the heap stay");
        let text = src.regions().into_iter().find(|r| r.file.is_some_and(|f| f.exec)).unwrap();
        // 4 KB: a page further than the file offset (out of phase mod 16 KB); 2 MB: in phase.
        assert_eq!(text.start - text.file.unwrap().offset, if m == 4096 { 0x20_1000 } else { 0x40_0000 });
    }
}

/// A shared object valgrind packed 4 KB past a 2 MB boundary lies at the boundary with
/// `loader.library_base=superpage` (its fetches and its region move; the executable stays),
/// where the trace saw it with `as-traced`, and where the trace saw it in a sidecar without
/// `# elf-lib` lines.
#[test]
fn a_large_shared_object_is_placed_at_a_superpage_boundary() {
    let refs = vec![Ref::new(0x806_d040, RefKind::Fetch, 4, 1, false), Ref::new(0x40_1000, RefKind::Fetch, 4, 1, false), Ref::load(0x837_0000, 1)];
    let p = tmp("libplace.xtr");
    write_native(&p, &refs, &NativeHeader::default());
    let side = format!("{}.maps", p.to_string_lossy());
    let maps = "\
00400000-00402000 r-xp 00000000 08:02 7 /bin/prog
0806d000-0836d000 r-xp 00000000 08:02 9 /lib/libbig.so
0836e000-08371000 rw-p 00300000 08:02 9 /lib/libbig.so
# file-size 8192 /bin/prog
# file-size 3153920 /lib/libbig.so
# elf-load 0 400000 2000 2000 5 /bin/prog
";
    let libs = "# elf-lib 0 0 300000 300000 5 /lib/libbig.so\n# elf-lib 300000 301000 2000 3000 6 /lib/libbig.so\n";
    let paths = [p.to_string_lossy().into_owned()];
    let superpage = crate::trace::Layout { max_page: None, library_align: 2 << 20, fast_forward: false };
    for (text, layout, want) in [
        (format!("{maps}{libs}"), superpage, [0x820_0040u64, 0x40_1000, 0x850_3000]),
        (format!("{maps}{libs}"), crate::trace::Layout::AS_TRACED, [0x806_d040, 0x40_1000, 0x837_0000]),
        (maps.to_string(), superpage, [0x806_d040, 0x40_1000, 0x837_0000]),
    ] {
        std::fs::write(&side, &text).unwrap();
        let (_, mut src) = crate::open_trace_until(&paths, None, None, layout, &AtomicBool::new(false)).unwrap();
        let vas: Vec<u64> = read_all(&mut *src, 0, 10).unwrap().iter().map(|r| r.va).collect();
        assert_eq!(vas, want, "{layout:?}, elf-lib lines: {}", text.contains("elf-lib"));
        let lib = src.regions().into_iter().find(|r| r.name == "/lib/libbig.so" && r.file.is_some_and(|f| f.exec)).unwrap();
        assert_eq!(lib.start, want[0] & !0xfff);
    }
}

/// `loader.fast_forward=resident`: the pages resident when the window began, in the mappings
/// the trace references, are touched first in address order (a store in writable memory, a
/// load in code), and they move with a relinked library; a mapping the trace never references
/// (valgrind's own) is left alone; a sidecar without `# resident` lines is an error naming
/// them.
#[test]
fn fast_forward_touches_the_resident_pages_of_the_mappings_the_trace_references() {
    let refs = vec![Ref::new(0x806_d040, RefKind::Fetch, 4, 1, false), Ref::load(0x1_0000_2008, 1)];
    let p = tmp("ffwd.xtr");
    write_native(&p, &refs, &NativeHeader::default());
    let side = format!("{}.maps", p.to_string_lossy());
    let maps = "\
0806d000-0836d000 r-xp 00000000 08:02 9 /lib/libbig.so
100000000-100010000 rw-p 00000000 00:00 0
58000000-58100000 rw-p 00000000 00:00 0
# file-size 3145728 /lib/libbig.so
# elf-lib 0 0 300000 300000 5 /lib/libbig.so
";
    let resident = "# resident 806e000 8070000\n# resident 100000000 100003000\n# resident 58000000 58002000\n";
    let paths = [p.to_string_lossy().into_owned()];
    let open = |text: &str, library_align: u64| {
        std::fs::write(&side, text).unwrap();
        let layout = crate::trace::Layout { max_page: None, library_align, fast_forward: true };
        crate::open_trace_until(&paths, None, None, layout, &AtomicBool::new(false))
    };
    let (_, mut src) = open(&format!("{maps}{resident}"), 4096).unwrap();
    let got = read_all(&mut *src, 0, 10).unwrap();
    let want = [
        (0x806_e000, RefKind::Load),
        (0x806_f000, RefKind::Load),
        (0x1_0000_0000, RefKind::Store),
        (0x1_0000_1000, RefKind::Store),
        (0x1_0000_2000, RefKind::Store),
    ];
    assert_eq!(got.len(), want.len() + refs.len());
    for (r, (va, kind)) in got.iter().zip(want) {
        assert_eq!((r.va, r.kind(), r.inst_delta), (va, kind, 0));
    }
    assert_eq!(got[want.len()..], refs[..], "then the trace");
    // With the library at a 2 MB boundary its touches move with it.
    let (_, mut src) = open(&format!("{maps}{resident}"), 2 << 20).unwrap();
    let got = read_all(&mut *src, 0, 10).unwrap();
    assert_eq!((got[0].va, got[5].va), (0x820_1000, 0x820_0040));
    let e = open(maps, 4096).err().unwrap().to_string();
    assert!(e.contains("needs the pages resident when the window began (# resident lines)"), "{e}");
    // Where the sidecar says which code ran before the window, a code mapping's touches are
    // those pages (resident or not), not its resident neighbours; data keeps its residents.
    let executed = "# executed 806f000 8071000\n# executed 9000000 9001000\n";
    let (_, mut src) = open(&format!("{maps}{resident}{executed}"), 4096).unwrap();
    let got = read_all(&mut *src, 0, 10).unwrap();
    let touched: Vec<u64> = got[..got.len() - refs.len()].iter().map(|r| r.va).collect();
    assert_eq!(touched, [0x806_f000, 0x807_0000, 0x1_0000_0000, 0x1_0000_1000, 0x1_0000_2000]);
    let e = open(&format!("{maps}{resident}# executed 9000000 9000000\n"), 4096).err().unwrap().to_string();
    assert!(e.contains("# executed START END"), "{e}");
}

/// `xlat trace --skip N --refs M`: the first N references (a program's start-up) are left
/// out, then at most M written; with fetches, each instruction is one.
#[test]
fn lackey_conversion_skips_and_stops() {
    let log = tmp("skip.lackey");
    std::fs::write(&log, "I  1000,4\n L 2000,8\nI  1004,4\n S 3000,8\nI  1008,4\n L 4000,8\n").unwrap();
    let out = tmp("skip.xtr");
    let opts = LackeyOptions { fetch: true, skip: 2, max: Some(3), ..Default::default() };
    assert_eq!(lackey_to_native_until(&log, &out, &opts, &AtomicBool::new(false)).unwrap(), 3);
    let (_, mut src) = crate::open_trace(&[out.to_string_lossy().into()], None).unwrap();
    let vas: Vec<u64> = read_all(&mut *src, 0, 10).unwrap().iter().map(|r| r.va).collect();
    assert_eq!(vas, vec![0x1004, 0x3000, 0x1008]);
}

/// Regions rounded out to 2 MB: the worked example, then against a reference model (the set
/// of 2 MB granules any region touches; each run of consecutive granules is one region).
#[test]
fn regions_round_out_to_the_alignment() {
    const MB2: u64 = 2 << 20;
    let r = |name: &str, start: u64, len: u64| Region { name: name.into(), start, len, file: None };
    let regions = vec![r("a", 0x1000, 0x2000), r("b", 0x25_0000, 0x1000), r("c", 0x80_0000, 0x1000)];
    assert_eq!(round_out(regions.clone(), 4096), regions, "4 KB keeps them");
    let out = round_out(regions, MB2);
    assert_eq!(out, vec![r("a", 0, 2 * MB2), r("c", 4 * MB2, MB2)], "a and b's granules touch: one region");
    let mut rng = Rng::new(9);
    for _ in 0..200 {
        let mut pages: Vec<u64> = (0..rng.below(40)).map(|_| rng.below(1 << 12)).collect();
        pages.sort_unstable();
        let regions = regions_of_pages(pages);
        let mut granules: Vec<u64> = regions.iter().flat_map(|r| r.start / MB2..r.end().div_ceil(MB2)).collect();
        granules.sort_unstable();
        granules.dedup();
        let mut want: Vec<(u64, u64)> = Vec::new();
        for g in granules {
            match want.last_mut() {
                Some(w) if w.1 == g * MB2 => w.1 += MB2,
                _ => want.push((g * MB2, (g + 1) * MB2)),
            }
        }
        let got: Vec<(u64, u64)> = round_out(regions, MB2).iter().map(|r| (r.start, r.end())).collect();
        assert_eq!(got, want);
    }
}

/// A log of windows (xlat's valgrind tool with `--windows`): each window to its own file, cut
/// at its length (the event that completes a window is written whole, so a window may hold
/// more), the instructions after a window's last access not carried into the next; a window
/// short of its length, or a log that ends inside one, is an error that names it.
#[test]
fn lackey_windows_go_to_their_own_files() {
    let log = "I  1000,4\n L 2000,8\n L 3000,128\n# window\nI  1100,4\nI  1104,4\n S 4000,8\n M 5000,8\n# window\n";
    let input = tmp("windows.txt");
    std::fs::write(&input, log).unwrap();
    let outs = [tmp("w0.xtr"), tmp("w1.xtr")];
    let opts = LackeyOptions { desc: Some("p".into()), fetch: false, skip: 0, max: Some(2) };
    assert_eq!(lackey_windows_to_native_until(&input, &outs, &opts, &AtomicBool::new(false)).unwrap(), 4);
    let w0 = decode_all(None, &std::fs::read(&outs[0]).unwrap()).unwrap();
    let w1 = decode_all(None, &std::fs::read(&outs[1]).unwrap()).unwrap();
    // Window 0: the load, then the wide load's first half (its second left out).
    assert_eq!(w0.iter().map(|r| (r.va, r.kind())).collect::<Vec<_>>(), [(0x2000, RefKind::Load), (0x3000, RefKind::Load)]);
    // Window 1: its own two instructions before the store (not window 0's one), then the
    // modify's load.
    assert_eq!(w1.iter().map(|r| (r.va, r.kind(), r.inst_delta)).collect::<Vec<_>>(), [(0x4000, RefKind::Store, 2), (0x5000, RefKind::Load, 0)]);
    // One trace of a window stops at its end too.
    let one = tmp("one.xtr");
    let opts_all = LackeyOptions { max: None, ..opts.clone() };
    assert_eq!(lackey_to_native_until(&input, &one, &opts_all, &AtomicBool::new(false)).unwrap(), 3);
    // A window shorter than asked, and a log that ends before the last window does.
    let long = LackeyOptions { max: Some(4), ..opts.clone() };
    let e = lackey_windows_to_native_until(&input, &outs, &long, &AtomicBool::new(false)).unwrap_err().to_string();
    assert!(e.contains("window 0 holds 3 references, not 4"), "{e}");
    let three = [tmp("a.xtr"), tmp("b.xtr"), tmp("c.xtr")];
    let e = lackey_windows_to_native_until(&input, &three, &opts, &AtomicBool::new(false)).unwrap_err().to_string();
    assert!(e.contains("the log ended in window 2 of 3, after 0 of its references"), "{e}");
}
