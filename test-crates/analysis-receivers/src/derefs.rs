//! A method reached through `Deref` types its result as the call itself is resolved (rusqlite's
//! `tx.prepare_cached(..)?` is `Connection::prepare_cached`, through `Transaction`'s `Deref`, and gives a
//! `CachedStatement`): the next call on that result was matched by name.

use std::ops::Deref;

pub struct Store {
    pub rows: Vec<u32>,
}

pub struct Cursor {
    pub at: usize,
}

/// Another type with a `step`, which a match by name would reach too.
pub struct Replay {
    pub at: usize,
}

impl Store {
    pub fn cursor(&self) -> Result<Cursor, String> {
        Ok(Cursor { at: self.rows.len() })
    }
}

impl Cursor {
    pub fn step(&mut self) -> usize {
        self.at += 1;
        self.at
    }
}

impl Replay {
    pub fn step(&mut self) -> usize {
        self.at += 2;
        self.at
    }
}

pub struct Session {
    store: Store,
}

impl Deref for Session {
    type Target = Store;

    fn deref(&self) -> &Store {
        &self.store
    }
}

pub fn first_step(session: &Session) -> Result<usize, String> {
    let mut cursor = session.cursor()?;
    Ok(cursor.step())
}
