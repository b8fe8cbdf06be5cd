//! Helpers shared by the integration tests.

/// xorshift64: a tiny deterministic generator for synthetic streams.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    #[allow(dead_code)]
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}
