//! The workload kernels. Each module has `DESC`, `PARAMS` and a struct implementing
//! [`KernelImpl`]; `new` validates parameters and lays out the simulated address space
//! (cheap), `run` builds the input and runs the algorithm (expensive).

use crate::params::{PDef, Params};
use crate::recorder::Recorder;
use crate::vas::Vas;
use crate::WorkloadError;

pub mod btree;
pub mod canneal;
pub mod chase;
pub mod churn;
pub mod gap;
pub mod graph;
pub mod graph500;
pub mod gups;
pub mod hashjoin;
pub mod kvstore;
pub mod liblinear;
pub mod random;
pub mod stream;
pub mod thrash;
pub mod xsbench;

pub trait KernelImpl: Sized + Send + 'static {
    fn new(p: &Params, native: bool) -> Result<Self, WorkloadError>;
    fn vas(&self) -> &Vas;
    fn threads(&self) -> usize;
    /// Build the input, call `rec.roi_begin()`, run the algorithm; returns a checksum of
    /// the result.
    fn run<R: Recorder>(&mut self, rec: &mut R) -> u64;
    /// Host memory its input takes while it runs, for the check before it is built
    /// (`hostmem`). 0: not estimated, for kernels whose real data is small or computed on the
    /// fly whatever their simulated footprint (chase, hashjoin, xsbench, ...): an estimate
    /// above the truth would refuse runs that fit, and what is not foreseen still ends in one
    /// line (the allocator's).
    fn host_bytes(&self) -> u64 {
        0
    }
}

pub struct Entry {
    pub name: &'static str,
    pub description: &'static str,
    pub params: &'static [PDef],
}

macro_rules! kernels {
    ($( $name:literal => $variant:ident($ty:ty, $module:ident) ),* $(,)?) => {
        pub static ENTRIES: &[Entry] = &[
            $( Entry { name: $name, description: $module::DESC, params: $module::PARAMS }, )*
        ];

        pub enum Kernel { $( $variant(Box<$ty>), )* }

        impl Kernel {
            pub fn new(name: &str, p: &Params, native: bool) -> Result<Kernel, WorkloadError> {
                match name {
                    $( $name => Ok(Kernel::$variant(Box::new(<$ty>::new(p, native)?))), )*
                    _ => Err(WorkloadError::UnknownWorkload {
                        name: name.to_string(),
                        known: ENTRIES.iter().map(|e| e.name).collect::<Vec<_>>().join(", "),
                    }),
                }
            }
            pub fn vas(&self) -> &Vas {
                match self { $( Kernel::$variant(k) => k.vas(), )* }
            }
            pub fn threads(&self) -> usize {
                match self { $( Kernel::$variant(k) => k.threads(), )* }
            }
            pub fn run<R: Recorder>(&mut self, rec: &mut R) -> u64 {
                match self { $( Kernel::$variant(k) => k.run(rec), )* }
            }
            pub fn host_bytes(&self) -> u64 {
                match self { $( Kernel::$variant(k) => k.host_bytes(), )* }
            }
            pub fn params(&self) -> &'static [PDef] {
                match self { $( Kernel::$variant(_) => $module::PARAMS, )* }
            }
        }
    };
}

kernels! {
    "gups" => Gups(gups::Gups, gups),
    "random" => Random(random::Random, random),
    "chase" => Chase(chase::Chase, chase),
    "stream" => Stream(stream::Stream, stream),
    "bfs" => Bfs(graph500::Bfs, graph500),
    "pagerank" => PageRank(gap::PageRank, gap_pr),
    "sssp" => Sssp(gap::Sssp, gap_sssp),
    "bc" => Bc(gap::Bc, gap_bc),
    "cc" => Cc(gap::Cc, gap_cc),
    "hashjoin" => HashJoin(hashjoin::HashJoin, hashjoin),
    "xsbench" => XsBench(xsbench::XsBench, xsbench),
    "kvstore" => KvStore(kvstore::KvStore, kvstore),
    "canneal" => Canneal(canneal::Canneal, canneal),
    "btree" => BTree(btree::BTree, btree),
    "tlbthrash" => Thrash(thrash::Thrash, thrash),
    "churn" => Churn(churn::Churn, churn),
    "liblinear" => LibLinear(liblinear::LibLinear, liblinear),
}

// The four GAP kernels share a module but each needs its own DESC/PARAMS path.
use gap::{bc as gap_bc, cc as gap_cc, pr as gap_pr, sssp as gap_sssp};

#[cfg(test)]
pub(crate) mod testutil {
    use super::*;
    use crate::recorder::VecRecorder;
    use xlat_core::Ref;

    /// Build kernel `K` from a spec's params and run it with every ref kept in memory.
    pub fn run_recorded<K: KernelImpl>(name: &'static str, defs: &[PDef], kv: &str) -> (K, Vec<Vec<Ref>>, u64) {
        let kvs: Vec<(String, String)> = kv
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|s| {
                let (a, b) = s.split_once('=').unwrap();
                (a.to_string(), b.to_string())
            })
            .collect();
        let p = Params::resolve(name, defs, &kvs, 1).unwrap();
        let mut k = K::new(&p, false).unwrap();
        let mut rec = VecRecorder::default();
        let sum = k.run(&mut rec);
        (k, rec.streams, sum)
    }

    /// Where the addresses of a kernel's references of kind `kind` in `region` come from:
    /// the regions of their producers, sorted ("" for independent references), over every
    /// stream.
    pub fn sources(vas: &Vas, streams: &[Vec<Ref>], kind: xlat_core::RefKind, region: &str) -> Vec<String> {
        let name = |va: u64| vas.regions().iter().find(|g| va >= g.start && va < g.end()).map_or("?", |g| g.name.as_str()).to_string();
        let mut from = std::collections::BTreeSet::new();
        for s in streams {
            for (n, r) in s.iter().enumerate().filter(|(_, r)| r.kind() == kind && name(r.va) == region) {
                let p = usize::from(r.producer());
                from.insert(if p == 0 { String::new() } else { name(s[n - p].va) });
            }
        }
        from.into_iter().collect()
    }

    /// The instructions a kernel's references carry, over every stream.
    pub fn instructions(streams: &[Vec<Ref>]) -> u64 {
        streams.iter().flatten().map(|r| u64::from(r.inst_delta)).sum()
    }

    /// How many of a kernel's references are of kind `kind` in `region`, over every stream.
    pub fn refs_in(vas: &Vas, streams: &[Vec<Ref>], kind: xlat_core::RefKind, region: &str) -> u64 {
        let g = vas.regions().iter().find(|g| g.name == region).unwrap_or_else(|| panic!("no region {region}"));
        streams.iter().flatten().filter(|r| r.kind() == kind && !r.is_os_call() && r.va >= g.start && r.va < g.end()).count() as u64
    }

    /// Every reference must fall inside one of the kernel's declared regions.
    pub fn assert_in_regions(vas: &Vas, streams: &[Vec<Ref>]) {
        let regs = vas.regions();
        for s in streams {
            for r in s {
                assert!(regs.iter().any(|g| r.va >= g.start && r.va + r.size as u64 <= g.end()), "ref {:#x} outside every region", r.va);
                assert!(r.size >= 1 && r.size <= 64);
            }
        }
    }
}
