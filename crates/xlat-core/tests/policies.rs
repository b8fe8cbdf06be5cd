//! Every replacement policy, TLB and page-walk cache against a tiny, obviously-correct
//! reference model, on random streams.

use std::collections::VecDeque;
use xlat_core::arch::addr::{PageSize, VirtAddr};
use xlat_core::arch::ctx::Invalidate;
use xlat_core::assoc::SetAssoc;
use xlat_core::config::Policy;
use xlat_core::memory::repl::LineKind;
use xlat_core::translate::pwc::Pwc;
use xlat_core::translate::tlb::{TlbArray, TlbEntry};

mod common;
use common::Rng;

/// One set of the reference model.
#[derive(Clone, Default)]
struct ModelSet {
    /// LRU/FIFO: most recent first. SRRIP: slots in way order with their prediction.
    order: VecDeque<u64>,
    slots: Vec<Option<(u64, u8)>>,
}

/// Reference: what a set-associative structure with `policy` should do on `access(key)`.
/// Returns (hit, evicted key).
fn model_access(m: &mut ModelSet, ways: usize, policy: Policy, key: u64) -> (bool, Option<u64>) {
    match policy {
        Policy::Lru | Policy::Fifo => {
            if let Some(p) = m.order.iter().position(|&k| k == key) {
                if policy == Policy::Lru {
                    m.order.remove(p);
                    m.order.push_front(key);
                }
                return (true, None);
            }
            m.order.push_front(key);
            let ev = if m.order.len() > ways { m.order.pop_back() } else { None };
            (false, ev)
        }
        Policy::Srrip => {
            if m.slots.is_empty() {
                m.slots = vec![None; ways];
            }
            if let Some(s) = m.slots.iter_mut().flatten().find(|(k, _)| *k == key) {
                s.1 = 0;
                return (true, None);
            }
            if let Some(free) = m.slots.iter().position(|s| s.is_none()) {
                m.slots[free] = Some((key, 2));
                return (false, None);
            }
            loop {
                if let Some(w) = m.slots.iter().position(|s| s.unwrap().1 == 3) {
                    let old = m.slots[w].unwrap().0;
                    m.slots[w] = Some((key, 2));
                    return (false, Some(old));
                }
                for s in m.slots.iter_mut().flatten() {
                    s.1 += 1;
                }
            }
        }
        Policy::Nru => {
            // Slots in way order with their used bit.
            if m.slots.is_empty() {
                m.slots = vec![None; ways];
            }
            let way = match m.slots.iter().position(|s| s.is_some_and(|(k, _)| k == key)) {
                Some(w) => w,
                None => {
                    let w = m.slots.iter().position(|s| s.is_none()).or_else(|| m.slots.iter().position(|s| s.unwrap().1 == 0)).unwrap_or(0);
                    let old = m.slots[w].map(|(k, _)| k);
                    m.slots[w] = Some((key, 0));
                    nru_use(m, w);
                    return (false, old);
                }
            };
            nru_use(m, way);
            (true, None)
        }
        Policy::Random | Policy::Ptp | Policy::CsaltD | Policy::CsaltCd | Policy::Dip => unreachable!("checked by their own tests"),
    }
}

/// NRU's use of way `w`: its bit set, and if that sets every way's, the others cleared (an
/// invalid way's bit is clear).
fn nru_use(m: &mut ModelSet, w: usize) {
    m.slots[w].as_mut().unwrap().1 = 1;
    if m.slots.iter().all(|s| s.is_some_and(|(_, b)| b == 1)) {
        for (i, s) in m.slots.iter_mut().enumerate() {
            if i != w {
                s.as_mut().unwrap().1 = 0;
            }
        }
    }
}

fn check_policy(policy: Policy, sets: usize, ways: usize, keys: u64, seed: u64) {
    let mut arr: SetAssoc<u64, u32> = SetAssoc::new(sets, ways, policy, seed);
    let mut model = vec![ModelSet::default(); sets];
    let mut rng = Rng(seed);
    for step in 0..100_000 {
        // Skewed keys so that there are hits as well as misses.
        let key = if rng.below(4) == 0 { rng.below(keys) } else { rng.below(keys / 8 + 1) };
        let set = arr.set_of(key);
        if rng.below(16) == 0 {
            // An invalidation (a shootdown, an inclusive LLC's back-invalidation): the block
            // leaves, and its way is free for the next fill.
            let dropped = arr.probe(set, key).and_then(|slot| arr.invalidate_slot(slot)).map(|e| e.key);
            let m = &mut model[set];
            let held = m.order.iter().position(|&k| k == key).map(|p| m.order.remove(p).unwrap());
            let held = held.or_else(|| m.slots.iter_mut().find(|s| s.is_some_and(|(k, _)| k == key)).and_then(|s| s.take()).map(|(k, _)| k));
            assert_eq!(dropped, held, "{policy} step {step}: invalidation of {key}");
            continue;
        }
        let (hit, ev) = match arr.lookup(set, key) {
            Some(_) => (true, None),
            None => {
                let (_, ev) = arr.insert(set, key, 0, LineKind::Data);
                (false, ev.map(|e| e.key))
            }
        };
        let (mhit, mev) = model_access(&mut model[set], ways, policy, key);
        assert_eq!((hit, ev), (mhit, mev), "{policy} step {step} key {key}: engine vs model");
    }
}

#[test]
fn lru_fifo_srrip_nru_match_their_models() {
    for policy in [Policy::Lru, Policy::Fifo, Policy::Srrip, Policy::Nru] {
        for (sets, ways, keys, seed) in [
            (1, 4, 16, 1),
            (8, 4, 200, 2),
            (64, 12, 3000, 3),
            (16, 16, 1000, 4),
            (1, 24, 64, 5),
            (4, 2, 40, 6),
            (2, 1, 8, 7),
            (2, 17, 120, 8),
            (1, 25, 90, 9),
            (1, 32, 100, 10),
        ] {
            check_policy(policy, sets, ways, keys, seed);
        }
    }
}

#[test]
fn random_policy_keeps_contents_consistent() {
    let (sets, ways) = (8usize, 4usize);
    let mut arr: SetAssoc<u64, u32> = SetAssoc::new(sets, ways, Policy::Random, 9);
    let mut contents: Vec<Vec<u64>> = vec![Vec::new(); sets];
    let mut rng = Rng(77);
    for _ in 0..50_000 {
        let key = rng.below(100);
        let set = arr.set_of(key);
        let present = contents[set].contains(&key);
        match arr.lookup(set, key) {
            Some(_) => assert!(present),
            None => {
                assert!(!present);
                let (_, ev) = arr.insert(set, key, 0, LineKind::Data);
                match ev {
                    Some(e) => {
                        assert_eq!(contents[set].len(), ways, "evicts only from a full set");
                        contents[set].retain(|&k| k != e.key);
                    }
                    None => assert!(contents[set].len() < ways),
                }
                contents[set].push(key);
            }
        }
    }
}

#[test]
fn tlb_array_is_an_lru_cache_of_pages_per_set() {
    let (entries, ways) = (64u64, 4u64);
    let sets = (entries / ways) as usize;
    let mut tlb = TlbArray::new(entries, ways, Policy::Lru, 1);
    let mut model = vec![ModelSet::default(); sets];
    let mut rng = Rng(5);
    for _ in 0..100_000 {
        let vpn = rng.below(300);
        let va = VirtAddr(vpn << 12 | rng.below(4096));
        let ctx = 1 + rng.below(2) as u32;
        let key = vpn << 1 | (ctx as u64 - 1);
        let set = (vpn as usize) & (sets - 1);
        let hit = tlb.lookup(va, PageSize::Size4K, ctx).is_some();
        if !hit {
            tlb.insert(va, PageSize::Size4K, ctx, TlbEntry::page(vpn + 1000, false));
        }
        let (mhit, _) = model_access(&mut model[set], ways as usize, Policy::Lru, key);
        assert_eq!(hit, mhit);
    }
}

#[test]
fn tlb_invalidation_removes_exactly_the_range() {
    let mut rng = Rng(11);
    for round in 0..50 {
        let mut tlb = TlbArray::new(256, 4, Policy::Lru, round);
        let mut held = Vec::new();
        for _ in 0..400 {
            let size = if rng.below(5) == 0 { PageSize::Size2M } else { PageSize::Size4K };
            let va = VirtAddr(rng.below(1 << 32) & !(size.bytes() - 1));
            let ctx = 1 + rng.below(2) as u32;
            tlb.insert(va, size, ctx, TlbEntry::page(1, false));
            held.push((va, size, ctx));
        }
        let start = rng.below(1 << 32);
        let end = start + rng.below(1 << 26);
        let present_before: Vec<bool> = held.iter().map(|&(va, s, c)| tlb.lookup(va, s, c).is_some()).collect();
        tlb.invalidate_where(|k| {
            let base = k.vpn() << k.size().shift();
            k.ctx == 1 && base < end && base + k.size().bytes() > start
        });
        for (i, &(va, size, ctx)) in held.iter().enumerate() {
            let overlaps = ctx == 1 && va.0 < end && va.0 + size.bytes() > start;
            let now = tlb.lookup(va, size, ctx).is_some();
            if overlaps {
                assert!(!now, "stale translation {va:?} survived the invalidation");
            } else {
                assert_eq!(now, present_before[i], "an unrelated entry changed");
            }
        }
    }
}

/// Reference PWC: per level, a fully associative list of (prefix, ctx) -> node, in LRU order
/// (a hit moves its entry to the front) or FIFO order (`pwc.policy=fifo`: a hit does not).
#[test]
fn pwc_longest_prefix_matches_model() {
    // Real sizes (levels searched by scanning) and large ones (hash-indexed levels under LRU,
    // scanned under any other policy).
    for policy in [Policy::Lru, Policy::Fifo] {
        for sizes in [[0u64, 0, 24, 4, 4, 0], [0, 0, 96, 80, 65, 0]] {
            check_pwc(sizes, policy);
        }
    }
}

/// The worked example of a PWC replacement policy: two L2 entries, A and B filled, A hit, C
/// filled. LRU evicts B (A was used since); FIFO evicts A (first in); NRU evicts B (B's fill
/// set both used bits, so A's was cleared; A's hit then cleared B's).
#[test]
fn a_pwc_policy_decides_which_prefix_a_fill_evicts() {
    let prefix = |i: u64| VirtAddr(i << 21);
    for (policy, kept, evicted) in [(Policy::Lru, 0, 1), (Policy::Fifo, 1, 0), (Policy::Nru, 0, 1)] {
        let mut pwc = Pwc::new([0, 0, 2, 0, 0, 0], [0; 6], policy, 1);
        // (A one-pass miss-ratio curve of the level is exact only under LRU.)
        assert_eq!(pwc.is_lru(2), policy == Policy::Lru);
        let mut hits = [false; 6];
        pwc.fill(prefix(0), 1, 2, 10);
        pwc.fill(prefix(1), 1, 2, 11);
        assert!(pwc.lookup(prefix(0), 1, 2, &mut hits).is_some());
        pwc.fill(prefix(2), 1, 2, 12);
        assert!(pwc.lookup(prefix(kept), 1, 2, &mut hits).is_some(), "{policy:?} keeps {kept}");
        assert!(pwc.lookup(prefix(evicted), 1, 2, &mut hits).is_none(), "{policy:?} evicts {evicted}");
    }
}

/// A page-walk-cache level under `pwc.policy=nru` (24 entries, fully associative, as the
/// default L2 level; and 4 sets of 8 ways, ChampSim's PSCL2) against the NRU model, one model
/// set per PWC set: a walk probes the level and fills it on a miss, with invalidations between.
#[test]
fn pwc_under_nru_matches_its_model() {
    for (entries, ways) in [(24u64, 0u64), (32, 8)] {
        // (0 ways: fully associative, one set.)
        let sets = entries.checked_div(ways).unwrap_or(1);
        let set_ways = (entries / sets) as usize;
        let mut pwc = Pwc::new([0, 0, entries, 0, 0, 0], [0, 0, ways, 0, 0, 0], Policy::Nru, 1);
        let mut model = vec![ModelSet::default(); sets as usize];
        let mut rng = Rng(0x5eed);
        for step in 0..100_000 {
            let tag = if rng.below(4) == 0 { rng.below(400) } else { rng.below(40) };
            let va = VirtAddr(tag << 21);
            let m = &mut model[(tag % sets) as usize];
            if rng.below(32) == 0 {
                pwc.invalidate(Invalidate::page(1, va));
                if let Some(s) = m.slots.iter_mut().find(|s| s.is_some_and(|(k, _)| k == tag)) {
                    *s = None;
                }
                continue;
            }
            let mut hits = [false; 6];
            let hit = pwc.lookup(va, 1, 2, &mut hits).is_some();
            let (mhit, _) = model_access(m, set_ways, Policy::Nru, tag);
            assert_eq!(hit, mhit, "{entries}x{ways} step {step}: tag {tag}");
            if !hit {
                pwc.fill_missed(va, 1, 2, 7);
            }
        }
        let held: std::collections::BTreeSet<u64> = pwc.entries().into_iter().map(|(_, k, _)| k.tag).collect();
        let modelled: std::collections::BTreeSet<u64> = model.iter().flat_map(|m| m.slots.iter().flatten().map(|&(k, _)| k)).collect();
        assert_eq!(held, modelled, "{entries}x{ways}: the same prefixes at the end");
    }
}

fn check_pwc(sizes: [u64; 6], policy: Policy) {
    let lru = policy == Policy::Lru;
    let mut pwc = Pwc::new(sizes, [0; 6], policy, 1);
    let mut model: Vec<VecDeque<(u64, u32)>> = vec![VecDeque::new(); 6];
    let mut rng = Rng(21);
    for step in 0..100_000 {
        // Addresses clustered so that every level sees hits and misses.
        let va = VirtAddr((rng.below(4) << 39) | (rng.below(16) << 30) | (rng.below(64) << 21) | (rng.below(512) << 12));
        let ctx = 1;
        let mut hits = [false; 6];
        let got = pwc.lookup(va, ctx, 4, &mut hits);
        // Model lookup: every level probed, the lowest hit wins.
        let mut want = None;
        for level in (2..=4u8).rev() {
            let tag = va.0 >> (12 + 9 * (level as u32 - 1));
            let list = &mut model[level as usize];
            if let Some(p) = list.iter().position(|&(t, c)| t == tag && c == ctx) {
                if lru {
                    let e = list.remove(p).unwrap();
                    list.push_front(e);
                }
                assert!(hits[level as usize], "{policy:?} step {step}: level {level} should hit");
                want = Some(level - 1);
            } else {
                assert!(!hits[level as usize], "{policy:?} step {step}: level {level} should miss");
            }
        }
        assert_eq!(got.map(|h| h.level), want);
        // A walk then fills the levels below its start.
        let start = want.unwrap_or(4);
        for level in (2..=start).rev() {
            pwc.fill(va, ctx, level, 7);
            let tag = va.0 >> (12 + 9 * (level as u32 - 1));
            let list = &mut model[level as usize];
            if let Some(p) = list.iter().position(|&(t, c)| t == tag && c == ctx) {
                list.remove(p);
            }
            list.push_front((tag, ctx));
            list.truncate(sizes[level as usize] as usize);
        }
    }
    // Invalidating a range drops the covering prefixes at every level.
    let va = VirtAddr(1 << 39);
    pwc.fill(va, 1, 4, 1);
    pwc.fill(va, 1, 3, 2);
    pwc.fill(va, 1, 2, 3);
    pwc.invalidate(Invalidate::page(1, va));
    let mut hits = [false; 6];
    assert_eq!(pwc.lookup(va, 1, 4, &mut hits), None);
}

/// Page-table prioritization with p = 1 against its definition: evict the LRU line that is
/// not a protected page-table line; if there is none, the LRU line. With p = 0, plain LRU.
#[test]
fn ptp_matches_its_definition() {
    use xlat_core::memory::repl::AnyPolicy;
    for (p, mask) in [(1.0, u64::MAX), (0.0, u64::MAX), (1.0, 0b01), (1.0, 0)] {
        let ways = 8;
        let mut arr: SetAssoc<u64, u32> = SetAssoc::new(4, ways, Policy::Ptp, 3);
        if let AnyPolicy::Ptp(ptp) = arr.policy_mut() {
            ptp.set_probability(p);
            ptp.set_protected_owners(mask);
        }
        // Model per set: (key, kind is PT, owner) in LRU order, most recent first.
        let mut model: Vec<VecDeque<(u64, bool, u8)>> = vec![VecDeque::new(); 4];
        let mut rng = Rng(99);
        for step in 0..50_000 {
            let key = rng.below(64);
            let pt = rng.below(3) == 0;
            let owner = rng.below(2) as u8;
            let set = arr.set_of(key);
            let m = &mut model[set];
            match arr.lookup(set, key) {
                Some(_) => {
                    let pos = m.iter().position(|e| e.0 == key).expect("model has it too");
                    let e = m.remove(pos).unwrap();
                    m.push_front(e);
                }
                None => {
                    assert!(m.iter().all(|e| e.0 != key));
                    let kind = if pt { LineKind::PageTable } else { LineKind::Data };
                    let (_, ev) = arr.insert_owned(set, key, 0, kind, owner);
                    if m.len() == ways {
                        let protected = |e: &(u64, bool, u8)| p > 0.5 && e.1 && (mask >> e.2) & 1 != 0;
                        let victim = m.iter().rposition(|e| !protected(e)).unwrap_or(ways - 1);
                        let want = m.remove(victim).unwrap().0;
                        assert_eq!(ev.map(|e| e.key), Some(want), "p={p} mask={mask:b} step {step}");
                    } else {
                        assert!(ev.is_none());
                    }
                    m.push_front((key, pt, owner));
                }
            }
        }
    }
}
