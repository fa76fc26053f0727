use std::cell::RefCell;

use crate::cache::Cache;
use crate::exec::block_on;
use crate::parse::{parse_count, parse_request, Method, Request};
use crate::render;
use crate::stats;
use crate::store::{DiskStore, MemoryStore};

struct State {
    cache: Cache,
    users: MemoryStore,
    posts: DiskStore,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State {
        cache: Cache::default(),
        users: MemoryStore::with_users(),
        posts: DiskStore { blocks: 20 },
    });
}

/// Handles one request line and returns the response line.
pub fn handle(raw: &str) -> String {
    let request = match parse_request(raw) {
        Ok(request) => request,
        Err(err) => return render::error(400, &err.to_string()),
    };
    STATE.with(|state| route(&mut state.borrow_mut(), &request))
}

fn route(state: &mut State, request: &Request) -> String {
    let segments: Vec<&str> = request.path.trim_start_matches('/').split('/').collect();
    match (request.method, segments.as_slice()) {
        (Method::Get, ["users", id]) => lookup_user(state, id),
        (Method::Get, ["posts", id]) => lookup_post(state, id),
        (Method::Get, ["stats"]) => block_on(stats_page(state)),
        (Method::Get, ["checksum", n]) => checksum(n),
        (Method::Post, _) => render::error(405, "read-only server"),
        _ => render::error(404, &format!("no route for {}", request.path)),
    }
}

fn lookup_user(state: &mut State, id: &str) -> String {
    let key = format!("users/{id}");
    match state.cache.get_or_load(&key, &state.users) {
        Some(name) => render::user(&name, "memory"),
        None => render::error(404, &format!("no user {id}")),
    }
}

fn lookup_post(state: &mut State, id: &str) -> String {
    let key = format!("posts/{id}");
    match state.cache.get_or_load(&key, &state.posts) {
        Some(post) => render::ok(&post),
        None => render::error(404, &format!("no post {id}")),
    }
}

async fn stats_page(state: &State) -> String {
    match stats::summary(&state.users, &state.posts).await {
        Ok(line) => render::ok(&format!("{line}; cache {} hits {} misses", state.cache.hits, state.cache.misses)),
        Err(err) => render::error(500, &err),
    }
}

/// `/checksum/<n>`: panics (in parse_count) when `n` is not a number.
fn checksum(n: &str) -> String {
    let count = parse_count(n);
    render::ok(&format!("checksum {:08x}", crate::store::checksum(count, 1)))
}
