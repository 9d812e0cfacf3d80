//! Running a query over a collection: match, sort, skip, limit, project; counts and distinct
//! values.
//!
//! This first executor scans the collection in `_id` order and lets the matcher judge every
//! document. A sort keeps at most [`SORT_MEMORY_LIMIT`] bytes of documents; with a limit it
//! keeps only the best `skip + limit` as it goes, so a sorted, limited query over a large
//! collection uses memory in proportion to the limit.

use bson::{Bson, Document, RawBsonRef, RawDocumentBuf};

use super::filter::Filter;
use super::projection::Projection;
use super::sort::Sort;
use crate::error::{Error, Result};
use crate::order::compare;
use crate::read::ReadCollection;

/// MongoDB's limit on the memory of a blocking sort: 100 MiB.
pub const SORT_MEMORY_LIMIT: usize = 100 * 1024 * 1024;

/// The options of a find, as in MongoDB: sort, projection, skip and limit (0 or `None`: no
/// limit).
#[derive(Debug, Clone, Default)]
pub struct FindOptions {
    pub sort: Option<Document>,
    pub projection: Option<Document>,
    pub skip: u64,
    pub limit: Option<u64>,
}

impl ReadCollection<'_> {
    /// The documents matching `filter`, sorted, skipped, limited and projected.
    pub fn find(&self, filter: &Document, options: &FindOptions) -> Result<Vec<Document>> {
        let filter = Filter::parse(filter)?;
        let sort = options.sort.as_ref().map(Sort::parse).transpose()?;
        let projection = options
            .projection
            .as_ref()
            .map(Projection::parse)
            .transpose()?;
        let limit = options.limit.filter(|&l| l > 0);
        let keep = limit.map(|l| options.skip.saturating_add(l));
        let mut selected = self.matching(&filter, sort.as_ref(), keep)?;
        let skip = usize::try_from(options.skip).unwrap_or(usize::MAX);
        selected.drain(..skip.min(selected.len()));
        if let Some(limit) = limit {
            selected.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
        }
        selected
            .iter()
            .map(|doc| match &projection {
                Some(p) => p
                    .apply(doc, &filter)
                    .map_err(|e| Error::corrupt(format!("collection `{}`", self.name()), e)),
                None => Document::try_from(doc.as_ref())
                    .map_err(|e| Error::corrupt(format!("collection `{}`", self.name()), e)),
            })
            .collect()
    }

    /// How many documents match `filter`, after `skip` and within `limit` (0: none).
    pub fn count_matching(&self, filter: &Document, skip: u64, limit: u64) -> Result<u64> {
        let filter = Filter::parse(filter)?;
        let mut n = 0u64;
        for doc in self.scan()? {
            let doc = doc?;
            if filter.matches(doc.as_raw()?) {
                n += 1;
            }
        }
        let n = n.saturating_sub(skip);
        Ok(if limit > 0 { n.min(limit) } else { n })
    }

    /// The distinct values of `key` among documents matching `filter`: arrays count element by
    /// element, values equal under MongoDB's comparison (`1` and `1.0`) count once, in sort
    /// order.
    pub fn distinct(&self, key: &str, filter: &Document) -> Result<Vec<Bson>> {
        let filter = Filter::parse(filter)?;
        let segments: Vec<&str> = key.split('.').collect();
        let mut values: Vec<bson::RawBson> = Vec::new();
        for doc in self.scan()? {
            let doc = doc?;
            let raw = doc.as_raw()?;
            if !filter.matches(raw) {
                continue;
            }
            let mut found = Vec::new();
            collect_values(RawBsonRef::Document(raw), &segments, &mut found);
            for v in found {
                if !values
                    .iter()
                    .any(|seen| compare(seen.as_raw_bson_ref(), v).is_eq())
                {
                    values.push(bson::RawBson::from(v));
                }
            }
        }
        values.sort_by(|a, b| compare(a.as_raw_bson_ref(), b.as_raw_bson_ref()));
        values
            .into_iter()
            .map(|v| {
                Bson::try_from(v)
                    .map_err(|e| Error::corrupt(format!("collection `{}`", self.name()), e))
            })
            .collect()
    }

    /// Matching documents in result order, keeping at most `keep` of them when given.
    fn matching(
        &self,
        filter: &Filter,
        sort: Option<&Sort>,
        keep: Option<u64>,
    ) -> Result<Vec<RawDocumentBuf>> {
        let keep = keep.map(|k| usize::try_from(k).unwrap_or(usize::MAX));
        let mut buffer: Vec<RawDocumentBuf> = Vec::new();
        let mut bytes = 0usize;
        for doc in self.scan()? {
            let doc = doc?;
            let raw = doc.as_raw()?;
            if !filter.matches(raw) {
                continue;
            }
            let Some(sort) = sort.filter(|s| !s.is_empty()) else {
                buffer.push(raw.to_owned());
                if keep.is_some_and(|k| buffer.len() >= k) {
                    break;
                }
                continue;
            };
            bytes += raw.as_bytes().len();
            buffer.push(raw.to_owned());
            if let Some(k) = keep
                && buffer.len() >= k.saturating_mul(2).max(64)
            {
                buffer.sort_by(|a, b| sort.compare(a, b));
                buffer.truncate(k);
                bytes = buffer.iter().map(|d| d.as_bytes().len()).sum();
            }
            if bytes > SORT_MEMORY_LIMIT {
                return Err(Error::SortMemoryExceeded {
                    collection: self.name().to_owned(),
                    limit: SORT_MEMORY_LIMIT,
                });
            }
        }
        if let Some(sort) = sort {
            buffer.sort_by(|a, b| sort.compare(a, b));
        }
        if let Some(k) = keep {
            buffer.truncate(k);
        }
        Ok(buffer)
    }
}

/// The values at a path for `distinct`: arrays at the end give their elements, arrays in the
/// middle are walked through their subdocuments; missing fields give nothing.
fn collect_values<'a>(value: RawBsonRef<'a>, segments: &[&str], out: &mut Vec<RawBsonRef<'a>>) {
    let Some((first, rest)) = segments.split_first() else {
        match value {
            RawBsonRef::Array(a) => out.extend(a.into_iter().map_while(Result::ok)),
            other => out.push(other),
        }
        return;
    };
    match value {
        RawBsonRef::Document(d) => {
            if let Ok(Some(child)) = d.get(first) {
                collect_values(child, rest, out);
            }
        }
        RawBsonRef::Array(a) => {
            for element in a.into_iter().map_while(Result::ok) {
                if let RawBsonRef::Document(_) = element {
                    collect_values(element, segments, out);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::FindOptions;
    use crate::Database;

    #[test]
    fn find_sorts_skips_and_limits() {
        let db = Database::in_memory().unwrap();
        db.collection("c")
            .insert_many(
                [
                    doc! { "_id": 1, "a": 3 },
                    doc! { "_id": 2, "a": 1 },
                    doc! { "_id": 3 },
                    doc! { "_id": 4, "a": [0, 9] },
                ],
                true,
            )
            .unwrap();
        let txn = db.read().unwrap();
        let c = txn.collection("c").unwrap().unwrap();
        let ids = |options: FindOptions| -> Vec<i32> {
            c.find(&doc! {}, &options)
                .unwrap()
                .iter()
                .map(|d| d.get_i32("_id").unwrap())
                .collect()
        };
        let sort = |s| FindOptions {
            sort: Some(s),
            ..FindOptions::default()
        };
        assert_eq!(ids(sort(doc! { "a": 1 })), [3, 4, 2, 1]);
        assert_eq!(ids(sort(doc! { "a": -1 })), [4, 1, 2, 3]);
        assert_eq!(
            ids(FindOptions {
                skip: 1,
                limit: Some(2),
                ..sort(doc! { "a": 1 })
            }),
            [4, 2]
        );
        assert_eq!(ids(sort(doc! { "a": 1, "_id": 1 })), [3, 4, 2, 1]);
    }
}
