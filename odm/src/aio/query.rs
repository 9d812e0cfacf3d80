//! Running the sync API's query builders from async code.

use std::future::Future;

use serde::de::DeserializeOwned;

use crate::error::Result;
use crate::model::Document;
use crate::watch::{ChangeEvent, EventDocument};
use crate::{Aggregate, Find, Watch};

use super::stream::{self, STEP_WAIT, Step, Stream};
use super::{inline, pool};

/// A find or an aggregation, built with the sync builders, run without blocking the caller.
pub trait Query: Sized + Send + 'static {
    /// What each result decodes as.
    type Item: Send + 'static;

    /// Every result, decoded.
    fn fetch_all(self) -> impl Future<Output = Result<Vec<Self::Item>>> + Send;

    /// The first result.
    fn fetch_one(self) -> impl Future<Output = Result<Option<Self::Item>>> + Send;

    /// The results one at a time, from one snapshot taken now, read ahead of the reader by
    /// at most [`crate::STREAM_BUFFER`]; see [`Stream`].
    fn stream(self) -> impl Future<Output = Result<Stream<Self::Item>>> + Send;

    /// What the sync builder's `explain` reports.
    type Explain: Send + 'static;

    /// How the query runs, and what running it examines (the sync builder's `explain`), on a
    /// worker. (Named apart from the builder's own `explain`, which Rust would call first.)
    fn fetch_explain(self) -> impl Future<Output = Result<Self::Explain>> + Send;
}

/// An aggregation's count of its results (the sync [`Aggregate::count`], a `$count` stage),
/// run without blocking the caller.
pub trait Count: Sized + Send + 'static {
    /// How many results the aggregation gives.
    fn fetch_count(self) -> impl Future<Output = Result<u64>> + Send;
}

impl<T: Document + Send + Sync + 'static> Query for Find<T> {
    type Item = T;

    fn fetch_all(self) -> impl Future<Output = Result<Vec<T>>> + Send {
        inline::read(starts_inline(&self), move || self.clone().to_vec())
    }

    fn fetch_one(self) -> impl Future<Output = Result<Option<T>>> + Send {
        inline::read(starts_inline(&self), move || self.clone().first())
    }

    fn stream(self) -> impl Future<Output = Result<Stream<T>>> + Send {
        stream::open(move || Ok(stream::from_producer(self.iter()?.into_producer())))
    }

    type Explain = odm_engine::query::Explain;

    fn fetch_explain(self) -> impl Future<Output = Result<Self::Explain>> + Send {
        pool::run(move || self.explain())
    }
}

impl<T, R, O> Query for Aggregate<T, R, O>
where
    T: Document + Send + Sync + 'static,
    R: 'static,
    O: DeserializeOwned + Send + 'static,
    Aggregate<T, R, O>: Send,
{
    type Item = O;

    fn fetch_all(self) -> impl Future<Output = Result<Vec<O>>> + Send {
        inline::read(runs_inline(&self), move || self.clone().to_vec())
    }

    fn fetch_one(self) -> impl Future<Output = Result<Option<O>>> + Send {
        inline::read(runs_inline(&self), move || self.clone().first())
    }

    fn stream(self) -> impl Future<Output = Result<Stream<O>>> + Send {
        stream::open(move || Ok(stream::from_producer(self.iter()?.into_producer())))
    }

    type Explain = odm_engine::aggregate::AggregateExplain;

    fn fetch_explain(self) -> impl Future<Output = Result<Self::Explain>> + Send {
        pool::run(move || self.explain())
    }
}

impl<T, R, O> Count for Aggregate<T, R, O>
where
    T: Document + Send + Sync + 'static,
    R: 'static,
    O: DeserializeOwned + Send + 'static,
    Aggregate<T, R, O>: Send,
{
    fn fetch_count(self) -> impl Future<Output = Result<u64>> + Send {
        inline::read(runs_inline(&self), move || self.clone().count())
    }
}

/// A change stream, refined with the sync [`Watch`] builder, as a [`Stream`] of typed events.
pub trait Subscribe: Sized + Send + 'static {
    /// What each event carries as its documents.
    type Event: Send + 'static;

    /// Opens the stream (a bad pipeline or a resume point the log no longer holds fails
    /// here). Events come as they are committed; the stream ends after an `invalidate`.
    /// Dropping it stops its reader within a fraction of a second.
    fn stream(self) -> impl Future<Output = Result<Stream<ChangeEvent<Self::Event>>>> + Send;
}

impl<T: EventDocument + Send + 'static> Subscribe for Watch<T>
where
    Watch<T>: Send,
{
    type Event = T;

    fn stream(self) -> impl Future<Output = Result<Stream<ChangeEvent<T>>>> + Send {
        Stream::generate(
            move || self.open(),
            |events| {
                Ok(match events.next_timeout(STEP_WAIT)? {
                    Some(event) => Step::Item(event),
                    None if events.is_closed() => Step::End,
                    None => Step::Idle,
                })
            },
        )
    }
}

/// Whether a find may start on the task's thread (see [`inline`]): on the embedded engine,
/// and without a time limit of its own (whose interrupt the slice's would replace).
fn starts_inline<T: Document>(find: &Find<T>) -> bool {
    find.database().engine().is_some() && !find.has_time_limit()
}

/// Whether an aggregation may start on the task's thread: as a find, and writing nothing
/// (`$out` and `$merge` wait for the writer's turn and the disk).
fn runs_inline<T: Document, R, O>(aggregate: &Aggregate<T, R, O>) -> bool {
    aggregate.database().engine().is_some() && !aggregate.has_time_limit() && !aggregate.writes()
}
