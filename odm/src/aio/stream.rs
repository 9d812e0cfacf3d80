//! Streams: a find's, an aggregation's or a change stream's results as a
//! [`futures_core::Stream`], filled ahead of the reader by a thread of their own.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::sync::{mpsc, oneshot};

use crate::STREAM_BUFFER;
use crate::cursor::Producer;
use crate::error::Result;

use super::pool::spawn_thread;

/// Results read ahead of the reader: at most [`STREAM_BUFFER`] wait in memory. Dropping the
/// stream stops its producer at the next result and releases the snapshot it read from.
///
/// It is a [`futures_core::Stream`] (so `StreamExt`'s adapters apply), and
/// [`Stream::next`] reads it without them.
pub struct Stream<T> {
    receiver: mpsc::Receiver<Result<T>>,
}

impl<T> std::fmt::Debug for Stream<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream")
            .field("waiting", &self.receiver.len())
            .finish()
    }
}

impl<T> Stream<T> {
    /// The next result; `None` after the last.
    pub async fn next(&mut self) -> Option<Result<T>> {
        self.receiver.recv().await
    }

    /// Every result left, in order; the first error ends it.
    pub async fn try_collect(mut self) -> Result<Vec<T>> {
        let mut out = Vec::new();
        while let Some(item) = self.next().await {
            out.push(item?);
        }
        Ok(out)
    }
}

impl<T> futures_core::Stream for Stream<T> {
    type Item = Result<T>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<T>>> {
        self.receiver.poll_recv(cx)
    }
}

/// Where a stream's producer puts its results.
pub(crate) struct Sink<T> {
    sender: mpsc::Sender<Result<T>>,
}

impl<T> Sink<T> {
    /// Hands `item` over, waiting while the stream is full; `false` once the stream is
    /// dropped: nobody wants more.
    pub(crate) fn send(&self, item: Result<T>) -> bool {
        self.sender.blocking_send(item).is_ok()
    }

    /// Whether the stream is still read.
    pub(crate) fn wanted(&self) -> bool {
        !self.sender.is_closed()
    }
}

/// Opens a stream on a reader thread: `open` runs there first (a query's snapshot, a server's
/// cursor), and its error is this call's; then what it returns fills the stream.
pub(crate) async fn open<T: Send + 'static, F: FnOnce(&Sink<T>)>(
    open: impl FnOnce() -> Result<F> + Send + 'static,
) -> Result<Stream<T>> {
    let (opened, is_open) = oneshot::channel();
    let (sender, receiver) = mpsc::channel(STREAM_BUFFER);
    spawn_thread("reader", move || {
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
    })?;
    match is_open.await {
        Ok(Ok(())) => Ok(Stream { receiver }),
        Ok(Err(e)) => Err(e),
        // The reader thread panicked while opening (a panic the sync call would have raised).
        Err(_) => Err(odm_engine::Error::ThreadUnavailable {
            what: "reader",
            source: std::io::Error::other("the reader stopped while opening the stream"),
        }
        .into()),
    }
}

/// A cursor's producer as what fills a stream.
pub(crate) fn from_producer<T>(producer: Producer<T>) -> impl FnOnce(&Sink<T>) {
    move |sink| producer(&mut |item| sink.send(item))
}
