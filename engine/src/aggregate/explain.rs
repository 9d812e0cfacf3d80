//! Explain of a pipeline: the find its head runs as (see `plan_pipeline`), then each stage
//! after it, with how many documents it passed on, run to the end as the pipeline would be:
//! in MongoDB's shape, a `stages` array whose first entry, `$cursor`, holds the find's plan.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::rc::Rc;
use std::time::Instant;

use bson::{Bson, Document, doc};

use super::{AggregateOptions, Documents, Head, Planned, Source, Stage, context};
use crate::error::Result;
use crate::query::Explain;
use crate::read::ReadCollection;

/// The explanation of one pipeline.
#[derive(Debug, Clone)]
pub struct AggregateExplain {
    /// The find the pipeline's head runs as; `None` when its first stage gives its own
    /// documents (`$documents`, `$collStats`, `$indexStats`), which then comes first in
    /// `stages`.
    pub cursor: Option<Explain>,
    /// The stages after the head, in order.
    pub stages: Vec<StageExplain>,
}

/// One stage of an explained pipeline.
#[derive(Debug, Clone)]
pub struct StageExplain {
    /// The stage as it runs: `$sortByCount`, `$bucket` and `$fill` appear as what they
    /// expand to.
    pub spec: Document,
    /// How many documents it passed on (for a final `$out` or `$merge`: how many it would
    /// write).
    pub returned: u64,
    /// Milliseconds from the start of the run until it passed on its last document (so each
    /// stage's figure includes the stages before it, as MongoDB counts).
    pub millis: u64,
    /// For `$group`: whether its input arrived in the order of its key, read from an index,
    /// so that it passed each group on as soon as the key changed.
    pub in_key_order: bool,
    /// For `$sort` and `$group`: what they wrote to temporary files past their memory limit.
    pub spill: crate::query::Spill,
}

impl ReadCollection<'_> {
    /// Plans and runs a pipeline, reporting the plan of its head and what each later stage
    /// passed on. A final `$out` or `$merge` is checked and listed with the documents it
    /// would write, but writes nothing.
    pub fn explain_aggregate(
        &self,
        pipeline: &[Document],
        options: &AggregateOptions,
    ) -> Result<AggregateExplain> {
        let (read, write) = match pipeline.split_last() {
            Some((last, read)) if super::output::is_output(last)? => (read, Some(last.clone())),
            _ => (pipeline, None),
        };
        let Planned {
            source,
            stages,
            collation,
        } = self.plan_pipeline(read, options)?;
        let start = Instant::now();
        let mut explained = Vec::with_capacity(stages.len() + 1);
        let mut counters = Vec::with_capacity(stages.len() + 1);
        let pulled = Rc::new(Cell::new(0u64));
        let (mut docs, find): (Documents<'_>, _) = match source {
            Source::Find(head) => {
                let Head {
                    cursor,
                    filter,
                    options,
                    ..
                } = *head;
                let cursor = Rc::new(RefCell::new(cursor));
                let (reader, returned) = (cursor.clone(), pulled.clone());
                let docs = std::iter::from_fn(move || {
                    let next = reader.borrow_mut().next();
                    if matches!(next, Some(Ok(_))) {
                        returned.set(returned.get() + 1);
                    }
                    next
                });
                (Box::new(docs), Some((cursor, filter, options)))
            }
            Source::Given(docs, spec) => {
                explained.push(stage_explain(spec, false));
                let docs = Box::new(docs.into_iter().map(Ok));
                (counted(docs, &mut counters, start), None)
            }
        };
        let context = context(self.snapshot(), options, collation);
        let mut budgets = Vec::with_capacity(stages.len());
        for (stage, spec) in stages {
            let in_key_order = matches!(
                stage,
                Stage::Group {
                    in_key_order: true,
                    ..
                }
            );
            explained.push(stage_explain(spec, in_key_order));
            let budget = context.budget.for_stage();
            budgets.push(budget.clone());
            docs = counted(
                stage.stream_within(docs, &context, budget),
                &mut counters,
                start,
            );
        }
        for doc in docs {
            doc?;
        }
        for (stage, counter) in explained.iter_mut().zip(&counters) {
            (stage.returned, stage.millis) = counter.get();
        }
        // The stages after a given first one (which has no budget of its own).
        let given = explained.len() - budgets.len();
        for (stage, budget) in explained[given..].iter_mut().zip(&budgets) {
            let (spills, spilled_bytes) = budget.spill_totals();
            stage.spill = crate::query::Spill {
                used_disk: spills > 0,
                spills,
                spilled_bytes,
            };
        }
        if let Some(spec) = write {
            let (returned, millis) = counters.last().map_or((pulled.get(), 0), |c| c.get());
            explained.push(StageExplain {
                returned,
                millis,
                ..stage_explain(spec, false)
            });
        }
        let cursor = match find {
            Some((cursor, filter, options)) => {
                let cursor = cursor.borrow();
                Some(self.explained(&filter, &options, &cursor, pulled.get())?)
            }
            None => None,
        };
        Ok(AggregateExplain {
            cursor,
            stages: explained,
        })
    }
}

fn stage_explain(spec: Document, in_key_order: bool) -> StageExplain {
    StageExplain {
        spec,
        returned: 0,
        millis: 0,
        in_key_order,
        spill: crate::query::Spill::default(),
    }
}

/// `docs`, counting into a new counter (added to `counters`) how many pass, and when the
/// last one did.
fn counted<'a>(
    docs: Documents<'a>,
    counters: &mut Vec<Rc<Cell<(u64, u64)>>>,
    start: Instant,
) -> Documents<'a> {
    let counter = Rc::new(Cell::new((0u64, 0u64)));
    counters.push(counter.clone());
    Box::new(docs.inspect(move |doc| {
        if doc.is_ok() {
            let millis = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
            counter.set((counter.get().0 + 1, millis));
        }
    }))
}

impl AggregateExplain {
    /// Reads an aggregation's explain document in MongoDB's shape (this engine's, or a
    /// server's at `executionStats`) back into the typed form: a pipeline that ran as a find
    /// alone, or its `$cursor` head and each later stage with what it passed on. Through a
    /// `mongos`, whose reply holds each shard's explain under `shards`, the first shard's
    /// stands for the pipeline.
    pub fn from_document(
        document: &Document,
        shard_key: Option<&crate::options::ShardKey>,
    ) -> AggregateExplain {
        if let Ok(shards) = document.get_document("shards")
            && let Some(Bson::Document(first)) = shards.values().next()
        {
            return AggregateExplain::from_document(first, shard_key);
        }
        let Ok(stages) = document.get_array("stages") else {
            return AggregateExplain {
                cursor: Some(Explain::from_document(document, shard_key)),
                stages: Vec::new(),
            };
        };
        let mut explain = AggregateExplain {
            cursor: None,
            stages: Vec::new(),
        };

        for entry in stages.iter().filter_map(Bson::as_document) {
            if let Ok(cursor) = entry.get_document("$cursor") {
                explain.cursor = Some(Explain::from_document(cursor, shard_key));
                continue;
            }
            let spec: Document = entry
                .iter()
                .filter(|(name, _)| name.starts_with('$'))
                .map(|(name, value)| (name.clone(), value.clone()))
                .collect();
            explain.stages.push(StageExplain {
                spec,
                returned: crate::expr::count_in(entry, "nReturned"),
                millis: crate::expr::count_in(entry, "executionTimeMillisEstimate"),
                in_key_order: entry.get_bool("inKeyOrder").unwrap_or(false),
                spill: crate::query::Spill {
                    used_disk: entry.get_bool("usedDisk").unwrap_or(false),
                    spills: crate::expr::count_in(entry, "spills"),
                    spilled_bytes: crate::expr::count_in(entry, "spilledBytes"),
                },
            });
        }
        explain
    }

    /// A document shaped like MongoDB's `explain("executionStats")` of an aggregate: the
    /// find's own explain when the whole pipeline ran as a find, else `stages` with a
    /// `$cursor` entry for the head.
    pub fn to_document(&self) -> Document {
        if self.stages.is_empty()
            && let Some(cursor) = &self.cursor
        {
            return cursor.to_document();
        }
        let mut stages: Vec<Bson> = Vec::with_capacity(self.stages.len() + 1);
        if let Some(cursor) = &self.cursor {
            stages.push(Bson::Document(doc! {
                "$cursor": cursor.to_document(),
                "nReturned": crate::number::int_or_long(cursor.returned as i64),
            }));
        }
        for stage in &self.stages {
            let mut entry = stage.spec.clone();
            entry.insert(
                "nReturned",
                crate::number::int_or_long(stage.returned as i64),
            );
            entry.insert(
                "executionTimeMillisEstimate",
                crate::number::int_or_long(stage.millis as i64),
            );
            if stage.in_key_order {
                entry.insert("inKeyOrder", true);
            }
            if is_blocking(&stage.spec) {
                insert_spill(&mut entry, stage.spill);
            }
            stages.push(Bson::Document(entry));
        }
        doc! { "explainVersion": "1", "stages": stages }
    }
}

/// Whether a stage may spill (through the external sort or `$group`'s partial states), and so
/// reports it as MongoDB does.
fn is_blocking(spec: &Document) -> bool {
    [
        "$sort",
        "$group",
        "$bucketAuto",
        "$sample",
        "$setWindowFields",
    ]
    .iter()
    .any(|stage| spec.contains_key(*stage))
}

/// MongoDB's spill figures of a stage that may spill: `usedDisk`, `spills`, `spilledBytes`.
pub(crate) fn insert_spill(entry: &mut Document, spill: crate::query::Spill) {
    entry.insert("usedDisk", spill.used_disk);
    entry.insert("spills", crate::number::int_or_long(spill.spills as i64));
    entry.insert(
        "spilledBytes",
        crate::number::int_or_long(spill.spilled_bytes as i64),
    );
}

impl fmt::Display for AggregateExplain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(cursor) = &self.cursor {
            writeln!(f, "{cursor}")?;
        }
        for stage in &self.stages {
            let name = stage.spec.keys().next().map_or("?", String::as_str);
            writeln!(
                f,
                "then {name}: passed on {} document(s){}",
                stage.returned,
                if stage.in_key_order {
                    ", reading its input in key order"
                } else {
                    ""
                }
            )?;
        }
        Ok(())
    }
}
