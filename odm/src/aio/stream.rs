//! Streams: a find's, an aggregation's or a change stream's results as a
//! [`futures_core::Stream`], filled ahead of the reader by a thread of their own.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use crate::STREAM_BUFFER;
use crate::cursor::{Producer, spawn_query_thread};
use crate::error::Result;

/// Results read ahead of the reader: at most [`STREAM_BUFFER`] wait in memory. Dropping the
/// stream stops its producer at the next result and releases the snapshot it read from.
///
/// It is a [`futures_core::Stream`] (so `StreamExt`'s adapters apply), and
/// [`Stream::next`] reads it without them.
pub struct Stream<T, E = crate::Error> {
    receiver: mpsc::Receiver<Result<T, E>>,
}

/// How long a generated stream's step waits for something to come before it answers
/// [`Step::Idle`]: so at most how late a dropped stream's reader notices it is no longer read.
pub const STEP_WAIT: Duration = Duration::from_millis(200);

/// What a generated stream's step found; see [`Stream::generate`].
#[derive(Debug)]
pub enum Step<T> {
    /// The next item.
    Item(T),
    /// Nothing yet: the step is taken again while the stream is read.
    Idle,
    /// The stream ends.
    End,
}

impl<T, E> std::fmt::Debug for Stream<T, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream")
            .field("waiting", &self.receiver.len())
            .finish()
    }
}

impl<T: Send + 'static, E: From<crate::Error> + Send + 'static> Stream<T, E> {
    /// A stream of what sync code produces, on a thread of its own: `open` runs first (its
    /// error is this call's), then `step` on what it opened, again and again, while the stream
    /// is read; an error ends the stream after it. `step` should wait up to [`STEP_WAIT`] for
    /// something to come: a dropped stream is noticed between steps.
    pub async fn generate<S: 'static>(
        open: impl FnOnce() -> Result<S, E> + Send + 'static,
        mut step: impl FnMut(&mut S) -> Result<Step<T>, E> + Send + 'static,
    ) -> Result<Stream<T, E>, E> {
        self::open(move || {
            let mut state = open()?;
            Ok(move |sink: &Sink<T, E>| {
                loop {
                    match step(&mut state) {
                        Ok(Step::Item(item)) => {
                            if !sink.send(Ok(item)) {
                                return;
                            }
                        }
                        Ok(Step::Idle) if sink.wanted() => {}
                        Ok(Step::Idle | Step::End) => return,
                        Err(e) => {
                            sink.send(Err(e));
                            return;
                        }
                    }
                }
            })
        })
        .await
    }
}

impl<T, E> Stream<T, E> {
    /// The next result; `None` after the last.
    pub async fn next(&mut self) -> Option<Result<T, E>> {
        self.receiver.recv().await
    }

    /// Every result left, in order; the first error ends it.
    pub async fn try_collect(mut self) -> Result<Vec<T>, E> {
        let mut out = Vec::new();
        while let Some(item) = self.next().await {
            out.push(item?);
        }
        Ok(out)
    }
}

impl<T, E> futures_core::Stream for Stream<T, E> {
    type Item = Result<T, E>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<T, E>>> {
        self.receiver.poll_recv(cx)
    }
}

/// Where a stream's producer puts its results.
pub(crate) struct Sink<T, E = crate::Error> {
    sender: mpsc::Sender<Result<T, E>>,
}

impl<T, E> Sink<T, E> {
    /// Hands `item` over, waiting while the stream is full; `false` once the stream is
    /// dropped: nobody wants more.
    pub(crate) fn send(&self, item: Result<T, E>) -> bool {
        self.sender.blocking_send(item).is_ok()
    }

    /// Whether the stream is still read.
    pub(crate) fn wanted(&self) -> bool {
        !self.sender.is_closed()
    }
}

/// Opens a stream on a reader thread: `open` runs there first (a query's snapshot, a server's
/// cursor), and its error is this call's; then what it returns fills the stream.
pub(crate) async fn open<T, E, F>(
    open: impl FnOnce() -> Result<F, E> + Send + 'static,
) -> Result<Stream<T, E>, E>
where
    T: Send + 'static,
    E: From<crate::Error> + Send + 'static,
    F: FnOnce(&Sink<T, E>),
{
    let (opened, is_open) = oneshot::channel();
    let (sender, receiver) = mpsc::channel(STREAM_BUFFER);
    spawn_query_thread("reader", move || {
        let fill = match open() {
            Ok(fill) => fill,
            Err(e) => {
                let _ = opened.send(Err(e));
                return;
            }
        };
        // The caller stopped waiting for the stream: nobody will read it.
        if opened.send(Ok(())).is_err() {
            return;
        }
        fill(&Sink { sender });
    })
    .map_err(E::from)?;
    match is_open.await {
        Ok(Ok(())) => Ok(Stream { receiver }),
        Ok(Err(e)) => Err(e),
        // The reader thread panicked while opening (a panic the sync call would have raised).
        Err(_) => Err(crate::Error::from(odm_engine::Error::ThreadUnavailable {
            what: "reader",
            source: std::io::Error::other("the reader stopped while opening the stream"),
        })
        .into()),
    }
}

/// A cursor's producer as what fills a stream.
pub(crate) fn from_producer<T>(producer: Producer<T>) -> impl FnOnce(&Sink<T>) {
    move |sink| producer(&mut |item| sink.send(item))
}
