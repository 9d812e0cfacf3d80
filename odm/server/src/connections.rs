//! The open connections, as `currentOp` lists the idle ones (`$all: true`, or the
//! `$currentOp` stage's `idleConnections: true`).
//!
//! A connection's state belongs to its task (or to `parking` while it is quiet), where no other
//! thread can read it; what `currentOp` shows of it (its client address, its application's
//! name, its user) is copied here when the connection opens and each time the handshake or
//! authentication changes it, and the entry goes when the connection's place under the cap
//! (`listener::Slot`) is given back. An entry takes about 120 bytes of one table, and a
//! connection that has not authenticated or named itself allocates nothing else here.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Mutex, MutexGuard};

use bson::{Document, doc};

use crate::connection::ConnectionState;

/// What `currentOp` shows of one connection.
#[derive(Debug, Clone)]
struct Known {
    client: SocketAddr,
    app_name: Option<String>,
    user: Option<(String, String)>,
}

/// The registry of open connections, by connection id.
#[derive(Debug, Default)]
pub struct Connections {
    open: Mutex<HashMap<u64, Known>>,
}

impl Connections {
    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Known>> {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records connection `id` from `client`, known by nothing else yet.
    pub(crate) fn open(&self, id: u64, client: SocketAddr) {
        let known = Known {
            client,
            app_name: None,
            user: None,
        };
        self.lock().insert(id, known);
    }

    /// Forgets connection `id`.
    pub(crate) fn close(&self, id: u64) {
        self.lock().remove(&id);
    }

    /// Copies what `currentOp` shows of `conn` (its application's name and its user), which its
    /// handshake or its authentication has just changed.
    pub fn describe(&self, conn: &ConnectionState) {
        if let Some(known) = self.lock().get_mut(&conn.id) {
            known.app_name.clone_from(&conn.app_name);
            known.user.clone_from(&conn.user);
        }
    }

    /// The open connections that run no operation now (`busy` holds the ids of those that do),
    /// as `currentOp` lists an idle connection; only those of `user` when it is given.
    pub fn idle(&self, busy: &[u64], user: Option<&Option<(String, String)>>) -> Vec<Document> {
        let open = self.lock();
        let mut idle: Vec<(&u64, &Known)> = open
            .iter()
            .filter(|(id, known)| !busy.contains(id) && user.is_none_or(|user| *user == known.user))
            .collect();
        idle.sort_unstable_by_key(|(id, _)| **id);
        idle.into_iter()
            .map(|(id, known)| {
                let connection_id = i64::try_from(*id).unwrap_or(i64::MAX);
                let mut entry = doc! {
                    "type": "op",
                    "active": false,
                    "client": known.client.to_string(),
                    "connectionId": connection_id,
                    "desc": format!("conn{id}"),
                };
                if let Some(app) = &known.app_name {
                    entry.insert("appName", app);
                }
                if let Some((db, user)) = &known.user {
                    entry.insert("effectiveUsers", vec![doc! {"user": user, "db": db}]);
                }
                entry
            })
            .collect()
    }
}
