//! The block cache: one weighted cache of store-file blocks shared by every store of a
//! database (HBase's LruBlockCache, with CLOCK in place of a linked list).
//!
//! Data blocks are cached as read and checked, and searched where they lie (their cells share
//! the block's buffer), so a hit costs one shard lock and reference-count bumps. Index and
//! bloom blocks are cached too, decoded, at in-memory priority, as HBase caches meta blocks.
//!
//! The counters are the shards', kept under their locks: a counter of the whole cache would
//! be one cache line that every reading thread writes at every lookup.
//!
//! # Eviction
//! Each shard runs CLOCK: an entry read since the hand last passed gets a second chance.
//! Entries stand in HBase's three priorities (`Segment`): a block is cached as *single*,
//! becomes *multi* when it is read again while cached, and in-memory entries (IN_MEMORY
//! families, index and bloom blocks) are *memory* from the start. The hand passes over memory
//! entries while they hold no more than [`IN_MEMORY_SHARE`] of the shard and other entries
//! remain, and over multi entries while they hold no more than [`MULTI_SHARE`] and single
//! entries remain. So a scan, whose blocks are each read once, evicts its own blocks and the
//! multi entries past their share, never the blocks that reads come back to (HBase's
//! LruBlockCache, `hbase.lru.blockcache.multi.percentage`). Without it, a scan of more than
//! twice the cache empties it of everything else: the hand clears a reference bit on one pass
//! and evicts on the next.
//!
//! # Weights
//! A block is charged its weight when inserted. A data block's row probes are built after it
//! is cached, by its fifth search, and are charged at its next lookup
//! ([`DataBlock::probe_bytes`]): a block searched once or twice, the usual fate of one
//! read by a random Get in a store larger than the cache, takes no room for probes it never
//! builds.
//!
//! # Invariants
//! 1. `used` is the sum of the weights of the entries present (with the probe bytes charged
//!    to them); it never exceeds the shard's capacity after an insert or a lookup returns.
//!    `memory_used` and `multi_used` are the sums of the weights of the memory and the multi
//!    entries.
//! 2. `map` and `slots` agree: `map[k] == i` exactly when `slots[i]` holds the entry of `k`.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::storefile::{Bloom, DataBlock, Index};

/// Fraction of each shard that in-memory entries may hold while protected from eviction
/// (HBase's `hbase.lru.blockcache.memory.percentage`).
pub const IN_MEMORY_SHARE: f64 = 0.25;
/// Fraction of each shard that entries read again while cached may hold while protected from
/// the eviction of entries read once (HBase's `hbase.lru.blockcache.multi.percentage`).
pub const MULTI_SHARE: f64 = 0.5;
/// Most shards a cache has; small caches have fewer, so that no shard is too small to hold a
/// large index block or to protect its in-memory share.
const MAX_SHARDS: usize = 16;
/// Capacity below which a cache gets one shard fewer.
const MIN_SHARD_BYTES: usize = 4 << 20;

/// A block's identity: the process-wide id of its open file and its offset there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BlockKey {
    pub file: u64,
    pub offset: u64,
}

/// A cached block, ready to search.
#[derive(Clone, Debug)]
pub enum Block {
    Data(Arc<DataBlock>),
    Index(Arc<Index>),
    Bloom(Arc<Bloom>),
}

/// How hard the cache holds on to a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Priority {
    Normal,
    /// IN_MEMORY families, index and bloom blocks.
    InMemory,
}

/// Counters since the cache was made (HBase's CacheStats).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub capacity_bytes: u64,
    pub size_bytes: u64,
    pub blocks: u64,
    /// Of `blocks`, the data blocks (the rest are index leaves and bloom chunks).
    pub data_blocks: u64,
    pub hits: u64,
    pub misses: u64,
    pub inserts: u64,
    pub evictions: u64,
    /// Data blocks read by queries, from the cache or from disk.
    pub data_block_reads: u64,
}

/// Where an entry stands in eviction's order (HBase's BlockPriority; see the module's
/// documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Segment {
    /// Not read since it was cached: evicted first.
    Single,
    /// Read again while cached.
    Multi,
    /// Cached at [`Priority::InMemory`].
    Memory,
}

#[derive(Debug)]
struct Entry {
    key: BlockKey,
    block: Block,
    /// The weight given at insert, plus the probe bytes charged since.
    weight: usize,
    /// Whether `weight` holds the data block's probe bytes. Probes are built once and never
    /// change, so they are charged once.
    probes_charged: bool,
    segment: Segment,
    referenced: bool,
}

#[derive(Debug, Default)]
struct Shard {
    map: HashMap<BlockKey, usize, BuildHasherDefault<KeyHasher>>,
    slots: Vec<Option<Entry>>,
    free: Vec<usize>,
    hand: usize,
    used: usize,
    memory_used: usize,
    multi_used: usize,
    counts: Counts,
}

/// A shard's counters ([`CacheStats`]'s).
#[derive(Debug, Default)]
struct Counts {
    hits: u64,
    misses: u64,
    inserts: u64,
    evictions: u64,
    data_block_reads: u64,
}

/// The shared cache. Cheap to share through an `Arc`.
#[derive(Debug)]
pub struct BlockCache {
    shards: Box<[Mutex<Shard>]>,
    shard_capacity: usize,
}

impl BlockCache {
    /// A cache holding up to `capacity_bytes` of blocks (0: caches nothing).
    #[must_use]
    pub fn new(capacity_bytes: usize) -> Arc<BlockCache> {
        let shards = (capacity_bytes / MIN_SHARD_BYTES).clamp(1, MAX_SHARDS);
        Arc::new(BlockCache {
            shards: (0..shards).map(|_| Mutex::new(Shard::default())).collect(),
            shard_capacity: capacity_bytes / shards,
        })
    }

    fn shard(&self, key: &BlockKey) -> &Mutex<Shard> {
        let mut h = KeyHasher::default();
        h.write_u64(key.file);
        h.write_u64(key.offset);
        // The high bits are the best mixed.
        &self.shards[(h.finish() >> 32) as usize % self.shards.len()]
    }

    /// The cache's capacity in bytes.
    #[must_use]
    pub fn capacity_bytes(&self) -> usize {
        self.shard_capacity * self.shards.len()
    }

    /// The cached block of `key`, marking it recently used.
    pub fn get(&self, key: &BlockKey) -> Option<Block> {
        self.lookup(key, true)
    }

    /// [`BlockCache::get`], counting a miss only with `count_miss`: a memory-only read that
    /// misses reads again from disk, and that read counts it.
    pub fn lookup(&self, key: &BlockKey, count_miss: bool) -> Option<Block> {
        self.lookup_data(key, count_miss, false)
    }

    /// [`BlockCache::lookup`] of a data block; with `count_read`, a query's read of it is
    /// counted too ([`CacheStats::data_block_reads`]) when it is found or its miss is
    /// counted (read from disk next).
    pub fn lookup_data(&self, key: &BlockKey, count_miss: bool, count_read: bool) -> Option<Block> {
        let mut s = self.shard(key).lock();
        let slot = s.map.get(key).copied();
        let found = slot.and_then(|i| s.read(i));
        if let (Some(i), Some(Block::Data(block))) = (slot, &found) {
            let probes = block.probe_bytes();
            if s.charge_probes(i, probes) {
                let evicted = s.make_room(0, self.shard_capacity);
                s.counts.evictions += evicted;
                s.check(self.shard_capacity);
            }
        }
        let c = &mut s.counts;
        if found.is_some() {
            c.hits += 1;
        } else if count_miss {
            c.misses += 1;
        }
        if count_read && (found.is_some() || count_miss) {
            c.data_block_reads += 1;
        }
        found
    }

    /// Caches `block` under `key`, evicting as needed. A block larger than a shard is not
    /// cached; a key already present keeps its block.
    pub fn insert(&self, key: BlockKey, block: Block, weight: usize, priority: Priority) {
        if weight > self.shard_capacity {
            return;
        }
        let mut s = self.shard(&key).lock();
        if s.map.contains_key(&key) {
            return;
        }
        let evicted = s.make_room(weight, self.shard_capacity);
        s.counts.inserts += 1;
        s.counts.evictions += evicted;
        s.add(Entry {
            key,
            block,
            weight,
            probes_charged: false,
            segment: match priority {
                Priority::Normal => Segment::Single,
                Priority::InMemory => Segment::Memory,
            },
            referenced: false,
        });
        s.check(self.shard_capacity);
    }

    /// Drops every block of `file` (its file was deleted or closed).
    pub fn evict_file(&self, file: u64) {
        for shard in &*self.shards {
            let mut s = shard.lock();
            let doomed: Vec<usize> = s
                .map
                .iter()
                .filter(|(k, _)| k.file == file)
                .map(|(_, &i)| i)
                .collect();
            for i in doomed {
                s.remove(i);
            }
        }
    }

    /// The counters and current size.
    #[must_use]
    pub fn stats(&self) -> CacheStats {
        let mut t = CacheStats {
            capacity_bytes: self.capacity_bytes() as u64,
            ..CacheStats::default()
        };
        for shard in &*self.shards {
            let s = shard.lock();
            let c = &s.counts;
            t.size_bytes += s.used as u64;
            t.blocks += s.map.len() as u64;
            t.data_blocks += s
                .slots
                .iter()
                .flatten()
                .filter(|e| matches!(e.block, Block::Data(_)))
                .count() as u64;
            t.hits += c.hits;
            t.misses += c.misses;
            t.inserts += c.inserts;
            t.evictions += c.evictions;
            t.data_block_reads += c.data_block_reads;
        }
        t
    }
}

impl Shard {
    /// Invariants 1 and 2 (with the `invariants` feature).
    fn check(&self, capacity: usize) {
        let weight_in = |seg: Option<Segment>| {
            let entries = self.slots.iter().flatten();
            let of = entries.filter(|e| seg.is_none_or(|seg| e.segment == seg));
            of.map(|e| e.weight).sum::<usize>()
        };
        invariant!(
            self.used <= capacity
                && self.used == weight_in(None)
                && self.memory_used == weight_in(Some(Segment::Memory))
                && self.multi_used == weight_in(Some(Segment::Multi))
                && self.map.len() == self.slots.iter().flatten().count(),
            "block cache shard: used {} of {} (memory {}, multi {}), not the sums of its entries' weights (invariants 1, 2)",
            self.used,
            capacity,
            self.memory_used,
            self.multi_used
        );
    }

    /// The bytes counted for entries of `segment`, for the segments that are counted.
    fn segment_used(&mut self, segment: Segment) -> Option<&mut usize> {
        match segment {
            Segment::Single => None,
            Segment::Multi => Some(&mut self.multi_used),
            Segment::Memory => Some(&mut self.memory_used),
        }
    }

    /// Entry `i`'s block, read: its reference bit set, and a single entry made multi.
    fn read(&mut self, i: usize) -> Option<Block> {
        let e = self.slots[i].as_mut()?;
        e.referenced = true;
        let block = e.block.clone();
        if e.segment == Segment::Single {
            e.segment = Segment::Multi;
            self.multi_used += e.weight;
        }
        Some(block)
    }

    fn add(&mut self, e: Entry) {
        self.used += e.weight;
        if let Some(used) = self.segment_used(e.segment) {
            *used += e.weight;
        }
        let key = e.key;
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i] = Some(e);
                i
            }
            None => {
                self.slots.push(Some(e));
                self.slots.len() - 1
            }
        };
        self.map.insert(key, i);
    }

    /// Charges entry `i` its data block's `probes` bytes, once they are built (not 0) and
    /// unless charged already; whether its weight grew (the caller makes room).
    fn charge_probes(&mut self, i: usize, probes: usize) -> bool {
        let Some(e) = self.slots[i].as_mut() else {
            return false;
        };
        if probes == 0 || e.probes_charged {
            return false;
        }
        e.weight += probes;
        e.probes_charged = true;
        let segment = e.segment;
        self.used += probes;
        if let Some(used) = self.segment_used(segment) {
            *used += probes;
        }
        true
    }

    fn remove(&mut self, i: usize) {
        if let Some(e) = self.slots[i].take() {
            self.map.remove(&e.key);
            self.used -= e.weight;
            if let Some(used) = self.segment_used(e.segment) {
                *used -= e.weight;
            }
            self.free.push(i);
        }
    }

    /// Evicts until `weight` more fits in `capacity`; returns how many entries went.
    fn make_room(&mut self, weight: usize, capacity: usize) -> u64 {
        let mut evicted = 0;
        // Two passes clear every reference bit, so within three every unprotected entry has
        // been offered; after that protection is ignored and the loop must end.
        let mut budget = 3 * self.slots.len();
        while self.used + weight > capacity && !self.map.is_empty() {
            let n = self.slots.len();
            self.hand = (self.hand + 1) % n;
            let force = budget == 0;
            budget = budget.saturating_sub(1);
            let protected = self.protects(capacity);
            let Some(e) = self.slots[self.hand].as_mut() else {
                continue;
            };
            if !force && e.referenced {
                e.referenced = false;
                continue;
            }
            if !force && protected(e.segment) {
                continue;
            }
            self.remove(self.hand);
            evicted += 1;
        }
        evicted
    }

    /// Which segments the hand passes over now, in a shard of `capacity`: each while it holds
    /// no more than its share and entries the hand may take remain (single ones, for multi;
    /// any other, for memory).
    fn protects(&self, capacity: usize) -> impl Fn(Segment) -> bool {
        let share = |fraction: f64| capacity as f64 * fraction;
        let memory =
            self.memory_used as f64 <= share(IN_MEMORY_SHARE) && self.used > self.memory_used;
        let multi = self.multi_used as f64 <= share(MULTI_SHARE)
            && self.used > self.memory_used + self.multi_used;
        move |segment| match segment {
            Segment::Single => false,
            Segment::Multi => multi,
            Segment::Memory => memory,
        }
    }
}

/// A fast hasher for two `u64`s (multiply-rotate, as in FxHash); keys are not attacker-chosen.
#[derive(Debug, Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(_n: usize) -> Block {
        use bytes::Bytes;
        let empty = Bytes::from_static(&[0; 4]);
        Block::Data(Arc::new(DataBlock::new(Bytes::new(), empty).unwrap()))
    }

    fn key(file: u64, offset: u64) -> BlockKey {
        BlockKey { file, offset }
    }

    #[test]
    fn hits_and_misses_are_counted() {
        let c = BlockCache::new(1 << 20);
        assert!(c.get(&key(1, 0)).is_none());
        c.insert(key(1, 0), data(1), 100, Priority::Normal);
        assert!(matches!(c.get(&key(1, 0)), Some(Block::Data(_))));
        let s = c.stats();
        assert_eq!((s.hits, s.misses, s.inserts, s.blocks), (1, 1, 1, 1));
        assert_eq!(s.size_bytes, 100);
    }

    #[test]
    fn counts_are_summed_over_the_shards() {
        let c = BlockCache::new(64 << 20);
        let keys: Vec<BlockKey> = (0..64).map(|i| key(i, i * 100)).collect();
        let shards: std::collections::HashSet<*const Mutex<Shard>> = keys
            .iter()
            .map(|k| std::ptr::from_ref(c.shard(k)))
            .collect();
        assert!(shards.len() > 1, "the keys fall in one shard");
        for k in &keys {
            c.insert(*k, data(1), 100, Priority::Normal);
        }
        for k in &keys {
            // A query's read of a cached block: a hit and a data block read.
            assert!(c.lookup_data(k, true, true).is_some());
            // A memory-only miss reads again from disk, which counts it: neither here.
            assert!(c.lookup_data(&key(k.file + 1000, 0), false, true).is_none());
            // A miss read from disk next: a miss and a data block read.
            assert!(c.lookup_data(&key(k.file + 2000, 0), true, true).is_none());
            // An index or bloom lookup: a hit, no data block read.
            assert!(c.lookup(k, true).is_some());
        }
        let s = c.stats();
        assert_eq!(
            (s.hits, s.misses, s.inserts, s.data_block_reads, s.blocks),
            (128, 64, 64, 128, 64)
        );
    }

    #[test]
    fn size_never_exceeds_capacity() {
        let c = BlockCache::new(16 * 1000);
        for i in 0..10_000 {
            c.insert(key(i % 7, i), data(1), 97, Priority::Normal);
            assert!(c.stats().size_bytes <= 16 * 1000);
        }
        let s = c.stats();
        assert!(s.evictions > 9_000, "{s:?}");
        assert!(
            s.size_bytes > 8 * 1000,
            "the cache is used, not emptied: {s:?}"
        );
    }

    #[test]
    fn in_memory_blocks_survive_a_scan_of_normal_blocks() {
        let c = BlockCache::new(16 * 10_000);
        let hot: Vec<BlockKey> = (0..64).map(|i| key(1, i)).collect();
        for k in &hot {
            c.insert(*k, data(1), 100, Priority::InMemory);
        }
        // A scan ten times the cache's size, touched once each.
        for i in 0..16_000 {
            c.insert(key(2, i), data(1), 100, Priority::Normal);
        }
        let kept = hot.iter().filter(|k| c.get(k).is_some()).count();
        assert_eq!(kept, hot.len());
    }

    /// `n` blocks of 100 bytes cached and each read once more: multi entries.
    fn read_again(c: &BlockCache, n: u64) -> Vec<BlockKey> {
        let hot: Vec<BlockKey> = (0..n).map(|i| key(1, i)).collect();
        for k in &hot {
            c.insert(*k, data(1), 100, Priority::Normal);
            assert!(c.get(k).is_some());
        }
        hot
    }

    /// A scan of `n` blocks of 100 bytes: each cached at its miss and never looked up again
    /// (the scanner holds it while it reads it).
    fn scan_once(c: &BlockCache, n: u64) {
        for i in 0..n {
            c.insert(key(2, i), data(1), 100, Priority::Normal);
        }
    }

    #[test]
    fn blocks_read_again_survive_a_scan_of_blocks_read_once() {
        // One shard (below `MIN_SHARD_BYTES`): room for a hundred blocks.
        let c = BlockCache::new(100 * 100);
        let hot = read_again(&c, 40);
        // Ten times the cache's size.
        scan_once(&c, 1_000);
        let kept = hot.iter().filter(|k| c.get(k).is_some()).count();
        assert_eq!(
            kept,
            hot.len(),
            "blocks read again hold 40% of the cache, within the share"
        );
    }

    #[test]
    fn blocks_read_again_keep_no_more_than_their_share_through_a_scan() {
        let capacity = 100 * 100;
        let c = BlockCache::new(capacity);
        let hot = read_again(&c, 80);
        scan_once(&c, 1_000);
        let kept_bytes = 100 * hot.iter().filter(|k| c.get(k).is_some()).count();
        let share = (capacity as f64 * MULTI_SHARE) as usize;
        assert!(
            kept_bytes <= share && kept_bytes + 100 > share,
            "the scan took back what blocks read again held past their share, and no more: \
             {kept_bytes} bytes kept, share {share}"
        );
    }

    #[test]
    fn recently_read_blocks_get_a_second_chance() {
        // Room for ten blocks, and keys of the same shard as the hot one.
        let c = BlockCache::new(1000);
        let hot = key(9, 9);
        c.insert(hot, data(1), 100, Priority::Normal);
        let same_shard: Vec<BlockKey> = (0..100_000)
            .map(|i| key(3, i))
            .filter(|k| std::ptr::eq(c.shard(k), c.shard(&hot)))
            .take(50)
            .collect();
        for k in same_shard {
            assert!(c.get(&hot).is_some(), "the hot block was evicted");
            c.insert(k, data(1), 100, Priority::Normal);
        }
    }

    #[test]
    fn evict_file_drops_only_that_file() {
        let c = BlockCache::new(1 << 20);
        for i in 0..50 {
            c.insert(key(1, i), data(1), 10, Priority::Normal);
            c.insert(key(2, i), data(1), 10, Priority::Normal);
        }
        c.evict_file(1);
        assert_eq!(c.stats().blocks, 50);
        assert!((0..50).all(|i| c.get(&key(2, i)).is_some()));
        assert!((0..50).all(|i| c.get(&key(1, i)).is_none()));
    }

    /// A block of `n` cells, rows `row-00000` and on.
    fn block_of(n: usize) -> Arc<DataBlock> {
        use crate::storefile::block::DataBlockBuilder;
        let mut b = DataBlockBuilder::default();
        for i in 0..n {
            b.add(&basalt_model::Cell::put(
                format!("row-{i:05}"),
                "f",
                "q",
                1,
                "v",
            ));
        }
        let body = bytes::Bytes::from(b.finish());
        Arc::new(DataBlock::new(bytes::Bytes::from_static(b"f"), body).unwrap())
    }

    /// Searches `block` for `row` (cell `at`) until the searches have built its probes.
    fn search_until_probed(block: &DataBlock, row: &str, at: usize) {
        let probe = basalt_model::Cell::put(row.to_owned(), "f", "q", 1, "");
        for _ in 0..100 {
            if block.probe_bytes() > 0 {
                return;
            }
            assert_eq!(block.lower_bound(&probe).unwrap(), at);
        }
        panic!("a hundred searches built no probes");
    }

    #[test]
    fn a_data_blocks_probes_are_charged_at_the_lookup_after_they_are_built() {
        let c = BlockCache::new(1 << 20);
        let block = block_of(100);
        let weight = block.weight();
        c.insert(
            key(1, 0),
            Block::Data(Arc::clone(&block)),
            weight,
            Priority::Normal,
        );
        assert!(c.get(&key(1, 0)).is_some());
        assert_eq!(
            c.stats().size_bytes,
            weight as u64,
            "no probes, none charged"
        );
        search_until_probed(&block, "row-00042", 42);
        assert_eq!(
            block.probe_bytes(),
            100 * 8,
            "the searches built the probes"
        );
        assert_eq!(
            c.stats().size_bytes,
            weight as u64,
            "charged at the next lookup"
        );
        assert!(c.get(&key(1, 0)).is_some());
        assert_eq!(c.stats().size_bytes, (weight + 800) as u64);
        assert!(c.get(&key(1, 0)).is_some());
        assert_eq!(c.stats().size_bytes, (weight + 800) as u64, "charged once");
    }

    #[test]
    fn charging_probes_makes_room_as_an_insert_does() {
        let block = block_of(100);
        let weight = block.weight();
        // One shard, full up to the block's own probes' worth of room less one byte.
        let capacity = weight + 9 * 100 + 800 - 1;
        let c = BlockCache::new(capacity);
        c.insert(
            key(1, 0),
            Block::Data(Arc::clone(&block)),
            weight,
            Priority::Normal,
        );
        for i in 0..9 {
            c.insert(key(2, i), data(1), 100, Priority::Normal);
        }
        assert_eq!(c.stats().blocks, 10);
        search_until_probed(&block, "row-00007", 7);
        assert!(c.get(&key(1, 0)).is_some());
        let s = c.stats();
        assert!(s.size_bytes <= capacity as u64, "{s:?}");
        assert_eq!((s.blocks, s.evictions), (9, 1), "{s:?}");
        assert!(
            c.get(&key(1, 0)).is_some(),
            "the block read keeps its place"
        );
    }

    #[test]
    fn a_zero_sized_cache_caches_nothing() {
        let c = BlockCache::new(0);
        c.insert(key(1, 0), data(1), 1, Priority::Normal);
        assert!(c.get(&key(1, 0)).is_none());
    }
}
