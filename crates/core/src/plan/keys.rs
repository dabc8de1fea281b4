//! The objects a sweep reads, per bucket: the numbered keys of a key template, or the
//! keys listed under a prefix (with their sizes) once before the sweep and shared by
//! every configuration of the run, so configurations read the same objects.

use std::sync::{Arc, OnceLock};

use super::key_template::KeyTemplate;

/// One object a listing found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedObject {
    pub key: String,
    pub size_bytes: u64,
}

/// What the listing of one bucket found, and what it cost (reported apart from the
/// sweep: the listing is untimed).
#[derive(Debug, Clone, PartialEq)]
pub struct BucketListing {
    pub bucket: String,
    /// The first `object_count` keys under the prefix, in the order the service gave.
    pub objects: Arc<Vec<ListedObject>>,
    /// ListObjectsV2 requests made (pages).
    pub requests: u32,
    /// Wall time of the listing, ms.
    pub wall_ms: f64,
    /// The listing's stop time came first: `objects` is what it found by then
    /// (`allow_fewer_keys`).
    pub out_of_time: bool,
}

/// The listing of every bucket of a plan, in the plan's bucket order; set once.
#[derive(Debug, Clone, Default)]
pub(crate) struct ListingCell(Arc<OnceLock<Vec<BucketListing>>>);

impl ListingCell {
    pub(crate) fn get(&self) -> Option<&[BucketListing]> {
        self.0.get().map(Vec::as_slice)
    }
    /// Sets the listing; a second call keeps the first (one listing per run).
    pub(crate) fn set(&self, listing: Vec<BucketListing>) {
        let _ = self.0.set(listing);
    }
}

/// Plans compare by their request; the listing is what the request made.
impl PartialEq for ListingCell {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for ListingCell {}

/// The keys one bucket's configurations read.
#[derive(Debug, Clone)]
pub enum Keys {
    Template(KeyTemplate),
    Listed(Arc<Vec<ListedObject>>),
}

impl Keys {
    /// The key of object `i` (for a listing, `i` is below [`Keys::count`]).
    pub fn key(&self, i: u32) -> String {
        match self {
            Keys::Template(t) => t.key(i),
            Keys::Listed(list) => list[i as usize].key.clone(),
        }
    }
    /// Objects there are: a listing's length; unbounded for a template.
    pub fn count(&self) -> u32 {
        match self {
            Keys::Template(_) => u32::MAX,
            Keys::Listed(list) => list.len() as u32,
        }
    }
    /// The listed size of object `i`; `None` for a template (sizes unknown before reading).
    pub fn size_bytes(&self, i: u32) -> Option<u64> {
        match self {
            Keys::Template(_) => None,
            Keys::Listed(list) => list.get(i as usize).map(|o| o.size_bytes),
        }
    }
}
