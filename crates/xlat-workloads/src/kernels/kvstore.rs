//! Key-value store lookups under a Zipf key distribution (YCSB-like): an index (open-
//! addressing hash table with linear probing, or a B+-tree) maps a key to a value slot in a
//! value heap; a get reads the value, a put overwrites it. Hot keys are scattered over the
//! key space (YCSB's scrambled Zipfian) so popularity is not address locality.

use crate::params::{choice, float, size, PDef, Params};
use crate::recorder::{interleave, static_split, Recorder};
use crate::rng::{derive, Rng, Zipf};
use crate::vas::{Arr, Vas};
use crate::WorkloadError;

use super::btree::BPlusTree;
use super::KernelImpl;

pub const DESC: &str = "key-value store: hash or B+-tree index + value heap, Zipf-distributed gets and puts";
pub const PARAMS: &[PDef] = &[
    size("keys", "8M", "stored keys"),
    size("ops", "8M", "operations (split over threads)"),
    float("theta", "0.99", "Zipf skew (0 = uniform; YCSB uses 0.99)"),
    float("writes", "0.05", "fraction of operations that are puts"),
    size("value", "64", "value size in bytes (8..64, one reference per value)"),
    choice("index", "hash", "index structure", &["hash", "btree"]),
    float("churn", "0", "fraction of puts after which the allocator returns the page of the overwritten value to the OS (an unmap call, as MADV_DONTNEED; its next use faults it back in): shootdowns from the workload"),
];

const EMPTY: u64 = u64::MAX;
/// Keys are `rank * PRIME mod keys`: a bijection that scatters hot ranks.
const PRIME: u64 = 2_305_843_009_213_693_951; // 2^61 - 1

/// Instructions per reference. No public program is this kernel's reference: the counts are its
/// own loop written in C (xoshiro256++ draws, YCSB's Zipfian sample with its two `pow` calls, the
/// 128-bit scramble's `__umodti3`, the multiplicative hash, linear probing over 16-byte slots,
/// the value) compiled by gcc 12 -O3 -march=x86-64-v2, an estimate; glibc 2.36's `pow` runs 126
/// instructions a call and `__umodti3` 18 (valgrind callgrind, which counts 370 instructions an
/// operation for 1 Mi keys, 0.99 skew, 5 % puts: these counts give the same).
mod cost {
    /// Before the first slot is read, the read included: rank 0 (`u zetan < 1`: one draw, no
    /// `pow`, no scramble), rank 1 (one `pow`) and the others (two).
    pub const FIRST_PROBE: [u32; 3] = [50, 223, 375];
    /// Each further slot: cmp, jne, add, and, mov, shl and the read, then cmp, je.
    pub const PROBE: u32 = 9;
    /// The value, found at the first slot (cmp, jne, jmp) or a later one (cmp, je), then shl,
    /// pxor, movsd, add and the second draw's lea, rol, and the value's load (8); a put's add,
    /// shr, cvtsi2sd, mulsd, comisd, jbe and add, add, store (9 more).
    pub const FOUND: [u32; 2] = [3, 2];
    pub const GET: u32 = 8;
    pub const PUT: u32 = 17;
    /// After a get: add, shr, cvtsi2sd, mulsd, comisd, jbe, add, add, cmp, jne; after a put cmp,
    /// jne.
    pub const GET_TAIL: u32 = 10;
    pub const PUT_TAIL: u32 = 2;
}

enum Index {
    Hash { slots: Arr, keys: Vec<u64>, shift: u32 },
    Tree { inner: Arr, leaves: Arr, tree: Option<BPlusTree> },
}

pub struct KvStore {
    vas: Vas,
    values_a: Arr,
    index: Index,
    keys: u64,
    ops: u64,
    theta: f64,
    writes: f64,
    churn: f64,
    value: u8,
    threads: usize,
    seed: u64,
    pub values: Vec<u64>,
    pub gets: u64,
    pub mismatches: u64,
    pub hot_hits: u64,
}

#[inline]
fn hash(key: u64, shift: u32) -> u64 {
    key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift
}

impl KernelImpl for KvStore {
    fn new(p: &Params, _native: bool) -> Result<Self, WorkloadError> {
        let keys = p.range("keys", 2, 1 << 34)?;
        let value = p.range("value", 8, 64)? as u8;
        let theta = p.f64("theta");
        if !(0.0..1.0).contains(&theta) {
            return Err(p.bad("theta", "must be in [0, 1)"));
        }
        let writes = p.f64("writes");
        if !(0.0..=1.0).contains(&writes) {
            return Err(p.bad("writes", "must be in [0, 1]"));
        }
        let churn = p.f64("churn");
        if !(0.0..=1.0).contains(&churn) {
            return Err(p.bad("churn", "must be in [0, 1]"));
        }
        let mut vas = Vas::new();
        let index = if p.str("index") == "btree" {
            let (inner, leaves) = BPlusTree::layout(&mut vas, keys, 256, "index_");
            Index::Tree { inner, leaves, tree: None }
        } else {
            // Load factor at most 1/2.
            let cap = (2 * keys).next_power_of_two();
            Index::Hash { slots: vas.array("index", cap, 16), keys: Vec::new(), shift: 64 - cap.trailing_zeros() }
        };
        let values_a = vas.array("values", keys, value as u64);
        Ok(KvStore {
            vas,
            values_a,
            index,
            keys,
            ops: p.u64("ops"),
            theta,
            writes,
            churn,
            value,
            threads: p.threads(),
            seed: p.seed(),
            values: Vec::new(),
            gets: 0,
            mismatches: 0,
            hot_hits: 0,
        })
    }
    fn vas(&self) -> &Vas {
        &self.vas
    }
    fn host_bytes(&self) -> u64 {
        // The values (a word a key) and the index: the hash's slots, or the tree built from
        // key and value vectors.
        let index = match &self.index {
            Index::Hash { shift, .. } => 8u64 << (64 - shift),
            Index::Tree { .. } => 16 * self.keys + self.keys / 8,
        };
        (8 * self.keys).saturating_add(index)
    }
    fn threads(&self) -> usize {
        self.threads
    }

    fn run<R: Recorder>(&mut self, rec: &mut R) -> u64 {
        let n = self.keys;
        // Key i lives in value slot i; the value's first word is (key, version).
        self.values = (0..n).map(|k| k << 16).collect();
        match &mut self.index {
            Index::Hash { keys, shift, .. } => {
                let cap = 1usize << (64 - *shift);
                *keys = vec![EMPTY; cap];
                for k in 0..n {
                    let mut s = hash(k, *shift) as usize;
                    while keys[s] != EMPTY {
                        s = (s + 1) & (cap - 1);
                    }
                    keys[s] = k;
                    if k % (1 << 20) == 0 && rec.stopped() {
                        return 0;
                    }
                }
            }
            Index::Tree { inner, leaves, tree } => {
                *tree = Some(BPlusTree::build((0..n).collect(), (0..n).collect(), 256, *inner, *leaves));
            }
        }
        let zipf = Zipf::new(n, self.theta);
        rec.roi_begin();
        let mut rngs: Vec<Rng> = (0..self.threads).map(|t| Rng::new(derive(self.seed, 0x4B + t as u64))).collect();
        let (va_vals, vsize, writes, churn) = (self.values_a, self.value, self.writes, self.churn);
        let index = &self.index;
        let values = &mut self.values;
        let (mut gets, mut mismatches, mut hot) = (0u64, 0u64, 0u64);
        let mut digest = 0u64;
        let mut tails = vec![0u32; self.threads];
        interleave(rec, &static_split(self.ops, self.threads), 256, |rec, t, lo, hi| {
            let rng = &mut rngs[t];
            let tail = &mut tails[t];
            for _ in lo..hi {
                let rank = zipf.sample(rng);
                if rank == 0 {
                    hot += 1;
                }
                let key = ((rank as u128 * PRIME as u128) % n as u128) as u64;
                let is_put = rng.f64() < writes;
                // Index lookup -> value slot. (The B+-tree's walk stands where the hash and the
                // probes are.)
                *tail += cost::FIRST_PROBE[rank.min(2) as usize];
                let mut found = cost::FOUND[0];
                let slot = match index {
                    Index::Hash { slots, keys, shift } => {
                        let cap = keys.len();
                        let mut s = hash(key, *shift) as usize;
                        loop {
                            rec.load(slots.at(s as u64), 16, std::mem::take(tail));
                            if keys[s] == key {
                                break Some(key);
                            }
                            if keys[s] == EMPTY {
                                break None;
                            }
                            *tail = cost::PROBE;
                            found = cost::FOUND[1];
                            s = (s + 1) & (cap - 1);
                        }
                    }
                    Index::Tree { tree: Some(tree), .. } => tree.lookup(rec, key, tail),
                    Index::Tree { tree: None, .. } => None,
                };
                let Some(slot) = slot else {
                    mismatches += 1;
                    continue;
                };
                if is_put {
                    // (The value's address came from the index entry, the last read.)
                    rec.store_dep(va_vals.at(slot), vsize, std::mem::take(tail) + found + cost::GET + cost::PUT);
                    *tail = cost::PUT_TAIL;
                    values[slot as usize] += 1;
                    // (Drawn only when churning, so the stream without churn is unchanged.)
                    if churn > 0.0 && rng.f64() < churn {
                        rec.os_call(xlat_core::os::OsOp::Unmap, va_vals.at(slot), 4096, 30);
                    }
                } else {
                    rec.load_dep(va_vals.at(slot), vsize, std::mem::take(tail) + found + cost::GET);
                    *tail = cost::GET_TAIL;
                    gets += 1;
                    if values[slot as usize] >> 16 != key {
                        mismatches += 1;
                    }
                    digest = digest.wrapping_add(values[slot as usize]);
                }
            }
        });
        self.gets = gets;
        self.mismatches = mismatches;
        self.hot_hits = hot;
        digest
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testutil::*;

    /// The C loop's counts (see [`cost`]): an operation's draw to its first slot 50, 223 or 375
    /// instructions (no `pow`, one, two: the rank says), 9 a further slot; a get's value 11 (10
    /// past the first slot) and 10 after; a put's 28 (27) and 2 after. The last operation's
    /// closing instructions come after the last reference.
    #[test]
    fn instructions_are_the_c_loops() {
        use xlat_core::RefKind::Load;
        let (k, s, _) = run_recorded::<KvStore>("kvstore", PARAMS, "keys=50000,ops=40000");
        // The ranks, drawn again: the Zipf sample, then the put's draw.
        let zipf = Zipf::new(50000, 0.99);
        let mut rng = Rng::new(derive(1, 0x4B));
        let draws: u64 = (0..40000)
            .map(|_| {
                let rank = zipf.sample(&mut rng);
                rng.f64();
                cost::FIRST_PROBE[rank.min(2) as usize] as u64
            })
            .sum();
        let slots = refs_in(&k.vas, &s, Load, "index");
        // Operations that read more than one slot: their value is 2 - 3 = -1 instruction off.
        let s0 = &s[0];
        let values = k.vas.regions().iter().find(|g| g.name == "values").unwrap().clone();
        let mut later = 0;
        let mut run = 0;
        for r in s0 {
            if r.va >= values.start && r.va < values.end() {
                later += u64::from(run > 1);
                run = 0;
            } else {
                run += 1;
            }
        }
        let (gets, puts) = (k.gets, 40000 - k.gets);
        let expect = draws + 9 * (slots - 40000) + (11 + 10) * gets + (28 + 2) * puts - later;
        let last = expect - instructions(&s);
        assert!(last == 10 || last == 2, "{last}");
    }

    #[test]
    fn gets_return_their_keys_values_under_zipf() {
        for index in ["hash", "btree"] {
            let kv = format!("keys=50000,ops=40000,threads=2,index={index}");
            let (k, s, _) = run_recorded::<KvStore>("kvstore", PARAMS, &kv);
            assert_eq!(k.mismatches, 0, "{index}");
            let puts: u64 = k.values.iter().map(|v| v & 0xFFFF).sum();
            assert_eq!(k.gets + puts, 40000, "{index}");
            assert!((puts as f64 / 40000.0 - 0.05).abs() < 0.01, "{index}: puts {puts}");
            // Zipf(0.99) over 50000 keys puts ~9% of operations on the hottest key.
            assert!(k.hot_hits > 2400 && k.hot_hits < 5000, "{index}: {}", k.hot_hits);
            assert_in_regions(&k.vas, &s);
            // A value is read or written at the address its index entry gave.
            let last = if index == "hash" { "index" } else { "index_leaves" };
            for kind in [xlat_core::RefKind::Load, xlat_core::RefKind::Store] {
                assert_eq!(sources(&k.vas, &s, kind, "values"), [last], "{index}");
            }
        }
    }

    #[test]
    fn churn_returns_overwritten_values_pages_to_the_os() {
        let (k, s, _) = run_recorded::<KvStore>("kvstore", PARAMS, "keys=5000,ops=4000,writes=0.5,churn=0.5");
        let calls: Vec<&xlat_core::Ref> = s[0].iter().filter(|r| r.is_os_call()).collect();
        let puts: u64 = k.values.iter().map(|v| v & 0xFFFF).sum();
        assert!((calls.len() as f64 / puts as f64 - 0.5).abs() < 0.06, "{} calls for {puts} puts", calls.len());
        // Each follows a store to the page it unmaps.
        for w in s[0].windows(2).filter(|w| w[1].is_os_call()) {
            assert_eq!((w[0].kind(), w[0].va & !0xfff), (xlat_core::RefKind::Store, w[1].va));
        }
    }
}
