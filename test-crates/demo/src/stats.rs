use std::future::Future;

use crate::exec::yield_now;
use crate::store::{checksum, Store};

/// Counts the records a store has among the first `n` ids.
pub async fn count(store: &dyn Store, prefix: &str, n: u32) -> usize {
    let mut found = 0;
    for id in 1..=n {
        if probe(store, &format!("{prefix}/{id}")).await {
            found += 1;
        }
    }
    found
}

async fn probe(store: &dyn Store, key: &str) -> bool {
    yield_now().await;
    store.load(key).is_some()
}

/// A summary line over both stores.
pub async fn summary(users: &dyn Store, posts: &dyn Store) -> Result<String, String> {
    let u = count_users(users).await;
    let p = count(posts, "posts", 2).await;
    let tag = checksum(u as u32, 1) % 1000;
    if u == 0 {
        return Err("no users".to_owned());
    }
    Ok(format!("{u} users in {}, {p} posts in {} (tag {tag})", users.name(), posts.name()))
}

/// A future built by a plain function (no `async fn`): its `async move` block gets the probe.
pub fn count_users(users: &dyn Store) -> impl Future<Output = usize> + '_ {
    async move { count(users, "users", 5).await }
}
