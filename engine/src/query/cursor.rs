//! Cursors: the results of a find, pulled one at a time.
//!
//! When the plan's order is the result order (no sort, or an index order that gives it), a
//! cursor holds no documents at all: each `next` pulls candidates from the plan until one
//! matches, skips or returns it, and stops after the limit. Otherwise the sort is blocking: on
//! creation the cursor reads every match and keeps them sorted, at most the best
//! `skip + limit` when there is a limit. Past the query's memory budget ([`SORT_MEMORY_LIMIT`]
//! bytes of kept documents unless a test lowers it) the sort writes sorted runs to a temporary
//! file and merges them (see `crate::spill`), or, when the find does not allow disk use,
//! refuses with [`Error::SortMemoryExceeded`] as MongoDB does.

use bson::{Document, RawDocument, RawDocumentBuf};

use super::candidates::{Candidate, Candidates, WalkStats};
use super::covered::{self, Output};
use super::key_output::KeyOutput;
use super::plan::Plan;
use super::selection::Query;
use super::sort::Sort;
use super::source::Source;
use crate::error::{Error, Result};
use crate::interrupt::Interrupt;
use crate::spill::Sorter;

/// MongoDB's limit on the memory of a blocking sort: 100 MiB.
pub const SORT_MEMORY_LIMIT: usize = crate::budget::MEMORY_LIMIT;

/// The results of a find; an iterator of `Result<T>` (documents, or the caller's type for
/// [`ReadCollection::find_as`](crate::ReadCollection::find_as)). After an error it returns
/// nothing more.
pub struct Cursor<'c, T = Document> {
    collection: &'c dyn Source,
    plan: Plan,
    /// The query; its skip and limit are counted down in `to_skip` and `remaining`.
    query: Query,
    results: Results<'c>,
    to_skip: u64,
    /// How many more to return; `None` for no limit.
    remaining: Option<u64>,
    covered: bool,
    in_memory_sort: bool,
    /// Results made of index keys or carrying record ids (`returnKey`, `showRecordId`).
    key_output: Option<KeyOutput>,
    decode: Decode<T>,
    /// Entered at each pull (see [`crate::interrupt`]).
    interrupt: Option<Interrupt>,
}

/// How a cursor turns a result into `T`: from the stored bytes, or from the projected document.
pub(crate) struct Decode<T> {
    /// Given the collection's name, the document and the name `T` gives `_id`.
    pub(crate) raw: fn(&str, &RawDocument, Option<&'static str>) -> Result<T>,
    pub(crate) projected: fn(&str, Document, Option<&'static str>) -> Result<T>,
    /// The name `T` gives `_id`, when it is not `_id`.
    pub(crate) id_field: Option<&'static str>,
}

impl Decode<Document> {
    /// Each result as a document.
    pub(crate) fn documents() -> Self {
        Decode {
            raw: |c: &str, raw: &RawDocument, _| {
                Document::try_from(raw).map_err(|e| Error::corrupt(format!("collection `{c}`"), e))
            },
            projected: |_: &str, doc: Document, _| Ok(doc),
            id_field: None,
        }
    }
}

impl Decode<RawDocumentBuf> {
    /// Each result's bytes: stored ones as they are, projected ones encoded.
    pub(crate) fn bytes() -> Self {
        Decode {
            raw: |_: &str, raw: &RawDocument, _| Ok(raw.to_owned()),
            projected: |c: &str, doc: Document, _| {
                RawDocumentBuf::try_from(&doc)
                    .map_err(|e| Error::corrupt(format!("collection `{c}`"), e))
            },
            id_field: None,
        }
    }
}

enum Results<'c> {
    /// Candidates in result order, judged as they come.
    Streaming(Box<Candidates<'c>>),
    /// Matches sorted (in memory or merged from disk), what finding them examined, and what
    /// the sort wrote to disk.
    Sorted(SortedDocs<'c>, WalkStats, Spill),
}

type SortedDocs<'c> = Box<dyn Iterator<Item = Result<RawDocumentBuf>> + 'c>;

/// What a blocking sort wrote to disk, as explain reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Spill {
    /// Whether it wrote anything.
    pub used_disk: bool,
    /// How many runs it wrote.
    pub spills: u64,
    /// The bytes of those runs.
    pub spilled_bytes: u64,
}

impl std::fmt::Debug for Cursor<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cursor")
            .field("collection", &self.collection.name())
            .field("covered", &self.covered)
            .finish_non_exhaustive()
    }
}

impl<'c, T> Cursor<'c, T> {
    pub(crate) fn new(
        collection: &'c dyn Source,
        plan: Plan,
        mut query: Query,
        decode: Decode<T>,
    ) -> Result<Self> {
        query.run_under(&plan, collection.meta());
        crate::interrupt::note_plan(|| plan.summary(collection.meta()));
        let output = match &query.projection {
            Some(p) => Output::Projected(p),
            None => Output::Documents,
        };
        let covering = covered::covering(
            collection.meta(),
            &plan,
            &query.filter,
            query.sort.as_ref(),
            output,
        );
        let covered = covering.is_some();
        let key_output = KeyOutput::new(&query.keys, &plan, collection.meta());
        let candidates = Candidates::new(collection, &plan, covering)?;
        let in_memory_sort = query.sort.is_some() && !plan.provides_sort;
        let results = match query.sort.as_ref().filter(|_| in_memory_sort) {
            None => Results::Streaming(Box::new(candidates)),
            Some(sort) => {
                let keep = query.limit.map(|l| query.skip.saturating_add(l));
                sorted(collection, candidates, &query, sort, keep)?
            }
        };
        Ok(Cursor {
            collection,
            plan,
            to_skip: query.skip,
            remaining: query.limit,
            query,
            results,
            covered,
            in_memory_sort,
            key_output,
            decode,
            interrupt: None,
        })
    }

    /// The cursor, entering `interrupt` at each pull.
    pub(crate) fn interrupted_by(mut self, interrupt: Option<Interrupt>) -> Self {
        self.interrupt = interrupt;
        self
    }

    /// The plan this cursor runs.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Whether the index alone answers the query (no document is read).
    pub fn is_covered(&self) -> bool {
        self.covered
    }

    /// Whether results were sorted in memory.
    pub fn sorted_in_memory(&self) -> bool {
        self.in_memory_sort
    }

    /// What the plan has examined so far.
    pub fn stats(&self) -> WalkStats {
        match &self.results {
            Results::Streaming(c) => c.stats(),
            Results::Sorted(_, stats, _) => *stats,
        }
    }

    /// The search of the query's `$text`, bound to the collection's text index, if it has one.
    pub(crate) fn text_match(&self) -> Option<std::sync::Arc<crate::text::TextMatch>> {
        self.query.text.clone()
    }

    /// What the blocking sort wrote to disk (nothing when there is none).
    pub fn spill(&self) -> Spill {
        match &self.results {
            Results::Streaming(_) => Spill::default(),
            Results::Sorted(_, _, spill) => *spill,
        }
    }

    fn output(&self, raw: &RawDocument) -> Result<T> {
        if let Some(keys) = &self.key_output {
            let name = self.collection.name();
            let doc = keys.apply(name, raw, || self.projected(raw))?;
            return (self.decode.projected)(name, doc, self.decode.id_field);
        }
        match &self.query.projection {
            Some(_) => {
                let projected = self.projected(raw)?;
                (self.decode.projected)(self.collection.name(), projected, self.decode.id_field)
            }
            None => (self.decode.raw)(self.collection.name(), raw, self.decode.id_field),
        }
    }
}

impl<T> Cursor<'_, T> {
    /// The result's document: projected, or the stored one.
    fn projected(&self, raw: &RawDocument) -> Result<Document> {
        match &self.query.projection {
            Some(p) => p
                .apply(raw, &self.query)
                .map_err(|e| e.into_error(self.collection.name())),
            None => Document::try_from(raw)
                .map_err(|e| Error::corrupt(format!("collection `{}`", self.collection.name()), e)),
        }
    }
}

/// Reads every match of a blocking sort, keeping at most `keep` (the best ones) when given.
/// Past the query's memory budget the sort spills to disk, or fails when disk use is not
/// allowed (see [`crate::spill::Sorter`]). A sort by text score keeps each match with its
/// score, computed once, in [`crate::text::SCORE_FIELD`] (which [`Sort::compare`] reads), and
/// removes it as the sorted documents come out.
fn sorted<'c>(
    collection: &dyn Source,
    mut candidates: Candidates<'c>,
    query: &Query,
    sort: &Sort,
    keep: Option<u64>,
) -> Result<Results<'c>> {
    let keep = keep.map(|k| usize::try_from(k).unwrap_or(usize::MAX));
    let budget = query.memory.budget(collection.spill_dir());
    let text = match (sort.needs_text_score(), &query.text) {
        (false, _) => None,
        (true, Some(text)) => Some(text.clone()),
        (true, None) => return Err(Error::InvalidFilter(super::projection::no_text_score())),
    };
    let order = sort.clone();
    let compare = move |a: &RawDocument, b: &RawDocument| order.compare(a, b);
    let mut sorter = Sorter::new(budget.clone(), "sort", compare, keep);
    for candidate in candidates.by_ref() {
        let candidate = candidate?;
        let raw = candidate.raw(collection.name())?;
        if !query.matches(raw)? {
            continue;
        }
        let mut kept = raw.to_owned();
        if let Some(text) = &text {
            let score = text
                .score(raw)
                .map_err(|e| Error::corrupt(format!("collection `{}`", collection.name()), e))?;
            kept.append(crate::text::SCORE_KEY, score);
        }
        if let Some(near) = query.near.as_ref().filter(|_| sort.needs_distance()) {
            let (path, near) = &**near;
            if let Some(distance) = crate::geo::document_distance(near, raw, path.segments()) {
                kept.append(crate::geo::DISTANCE_KEY, distance);
            }
        }
        sorter.push(kept).map_err(|e| match e {
            Error::AggregateMemoryExceeded { limit, .. } => Error::SortMemoryExceeded {
                collection: collection.name().to_owned(),
                limit,
            },
            other => other,
        })?;
    }
    let spilled = sorter.spilled();
    let docs: SortedDocs<'c> = if text.is_some() || sort.needs_distance() {
        Box::new(sorter.finish()?.map(|scored| scored.map(unscored)))
    } else {
        Box::new(sorter.finish()?)
    };
    let (spills, spilled_bytes) = budget.spill_totals();
    let spill = Spill {
        used_disk: spilled,
        spills,
        spilled_bytes,
    };
    Ok(Results::Sorted(docs, candidates.stats(), spill))
}

/// A document without the text score or distance [`sorted`] appended to it.
fn unscored(scored: RawDocumentBuf) -> RawDocumentBuf {
    let mut doc = RawDocumentBuf::new();
    for element in &scored {
        if let Ok((key, value)) = element
            && key.as_str() != crate::text::SCORE_FIELD
            && key.as_str() != crate::geo::DISTANCE_FIELD
        {
            doc.append(key, value);
        }
    }
    doc
}

impl<T> Iterator for Cursor<'_, T> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Result<T>> {
        if self.remaining == Some(0) {
            return None;
        }
        let _entered = self.interrupt.as_ref().map(Interrupt::enter);
        if let Some(Err(stopped)) = self.interrupt.as_ref().map(Interrupt::status) {
            self.remaining = Some(0);
            return Some(Err(stopped.into()));
        }
        loop {
            if self.remaining == Some(0) {
                return None;
            }
            let result = match &mut self.results {
                Results::Streaming(candidates) => match candidates.next()? {
                    Ok(candidate) => self.judge(&candidate),
                    Err(e) => Some(Err(e)),
                },
                Results::Sorted(docs, _, _) => match docs.next()? {
                    Ok(doc) => self.take(&doc),
                    Err(e) => Some(Err(e)),
                },
            };
            match result {
                None => {}
                // A document that does not decode as `T` is that document's error: it was
                // counted as a match, and the next one is read on the next call.
                Some(Err(e @ Error::Decode { .. })) => return Some(Err(e)),
                // Anything else (storage, a sort past its bound) ends the results.
                Some(Err(e)) => {
                    self.remaining = Some(0);
                    return Some(Err(e));
                }
                Some(ok) => return Some(ok),
            }
        }
    }
}

impl<T> Cursor<'_, T> {
    /// A streamed candidate: returned if it matches and is not skipped.
    fn judge(&mut self, candidate: &Candidate) -> Option<Result<T>> {
        let raw = match candidate.raw(self.collection.name()) {
            Ok(raw) => raw,
            Err(e) => return Some(Err(e)),
        };
        match self.query.matches(raw) {
            Ok(true) => {}
            Ok(false) => return None,
            Err(e) => return Some(Err(e.into())),
        }
        self.take(raw)
    }

    /// A match: skipped, or counted against the limit and returned.
    fn take(&mut self, raw: &RawDocument) -> Option<Result<T>> {
        if self.to_skip > 0 {
            self.to_skip -= 1;
            return None;
        }
        if let Some(r) = &mut self.remaining {
            *r -= 1;
        }
        Some(self.output(raw))
    }
}
