//! The standard library as the analysis models it, in one place: which std methods and macros are cheap, which
//! return std values, which traits operators and formatting call, which methods derives provide, and which
//! implicit calls the graph follows ([`IMPLICIT_CALLS`]).

use super::syntax::TyRef;

/// Constant-time queries that return a std value (`usize`, `bool`) on any std collection or wrapper.
const STD_QUERIES: &[&str] = &["len", "is_empty", "is_some", "is_none", "is_ok", "is_err"];

/// Whether `x.method(..)` returns a std value whatever `x` is: an iterator adaptor, a string view, a query.
pub(super) fn returns_std_value(method: &str) -> bool {
    STD_RESULT_METHODS.contains(&method) || STD_QUERIES.contains(&method)
}

/// The std type `x.method(..)` returns when [`returns_std_value`] says it is one, as far as the name tells
/// (empty when it depends on `x`).
pub(super) fn std_result_type(method: &str) -> &'static str {
    match method {
        "to_string" | "to_lowercase" | "to_uppercase" => "String",
        "as_str" | "trim" | "trim_start" | "trim_end" => "str",
        "as_bytes" => "[u8]",
        "len" => "usize",
        "is_empty" | "is_some" | "is_none" | "is_ok" | "is_err" => "bool",
        _ => "",
    }
}

/// The std type a value macro of [`STD_VALUE_MACROS`] builds.
pub(super) fn std_macro_type(name: &str) -> &'static str {
    match name {
        "format" => "String",
        "vec" => "Vec",
        "concat" | "stringify" => "str",
        _ => "",
    }
}

/// Integer types: an unsuffixed integer literal (`{integer}`) may be any of them.
pub(super) const INTEGERS: &[&str] =
    &["u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize"];

/// The std type of a literal: `str`, `bool`, `char`, the suffix's type, `{integer}`/`{float}` without one.
pub(super) fn literal_type(lit: &syn::Lit) -> &'static str {
    let suffixed =
        |suffix: &str, default: &'static str| PRIMITIVES.iter().copied().find(|p| *p == suffix).unwrap_or(default);
    match lit {
        syn::Lit::Str(_) => "str",
        syn::Lit::Bool(_) => "bool",
        syn::Lit::Char(_) => "char",
        syn::Lit::Int(i) => suffixed(i.suffix(), "{integer}"),
        syn::Lit::Float(f) => suffixed(f.suffix(), "{float}"),
        _ => "",
    }
}

/// Whether a std method of this name runs in constant time without allocating.
pub(super) fn is_cheap_std_method(name: &str) -> bool {
    CHEAP_STD_METHODS.contains(&name) || STD_QUERIES.contains(&name)
}

/// Methods whose result is a std type whatever they are called on (iterator adaptors, string views).
const STD_RESULT_METHODS: &[&str] = &[
    "enumerate",
    "zip",
    "chain",
    "rev",
    "skip",
    "take",
    "peekable",
    "cloned",
    "copied",
    "filter",
    "filter_map",
    "flat_map",
    "skip_while",
    "take_while",
    "step_by",
    "windows",
    "chunks",
    "chars",
    "bytes",
    "lines",
    "split_whitespace",
    "char_indices",
    "to_string",
    "to_lowercase",
    "to_uppercase",
    "trim",
    "trim_start",
    "trim_end",
    "as_str",
    "as_bytes",
];

/// std's provided `Iterator` methods that pull items through `next` (adaptors and consumers alike): called on a
/// workspace type that implements `Iterator`, they reach its `next`.
pub(super) const ITERATOR_METHODS: &[&str] = &[
    "all",
    "any",
    "by_ref",
    "chain",
    "cloned",
    "collect",
    "copied",
    "count",
    "cycle",
    "enumerate",
    "filter",
    "filter_map",
    "find",
    "find_map",
    "flat_map",
    "flatten",
    "fold",
    "for_each",
    "fuse",
    "inspect",
    "last",
    "map",
    "map_while",
    "max",
    "max_by",
    "max_by_key",
    "min",
    "min_by",
    "min_by_key",
    "nth",
    "partition",
    "peekable",
    "position",
    "product",
    "reduce",
    "scan",
    "skip",
    "skip_while",
    "step_by",
    "sum",
    "take",
    "take_while",
    "try_fold",
    "try_for_each",
    "unzip",
    "zip",
];

/// The receiver text of a method called on a range expression.
pub const RANGE_RECEIVER: &str = "(..)";

/// Macros that expand to a few comparisons (or to nothing in release builds), or that only run on the way to a
/// panic: allowed in a trivial body (the calls in their arguments are judged like any other call).
pub const CHEAP_MACROS: &[&str] = &[
    "matches",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
    "assert",
    "panic",
    "unreachable",
    "unimplemented",
    "todo",
];

/// A std trait's method called by path on a value (`fmt::Display::fmt(&x, f)`, `Iterator::next(&mut it)`,
/// `Clone::clone(&v)`): (trait, the method) when `trait_name::method` is one, so that the call reaches the first
/// argument's impl of that trait as `x.method(..)` would.
pub(super) fn std_trait_method(trait_name: &str, method: &str) -> Option<(&'static str, &'static [&'static str])> {
    Some(match (trait_name, method) {
        ("Display", "fmt") => ("Display", &["fmt"]),
        ("Debug", "fmt") => ("Debug", &["fmt"]),
        ("Iterator", "next") => ("Iterator", &["next"]),
        ("Clone", "clone") => ("Clone", &["clone"]),
        ("PartialEq", "eq" | "ne") => ("PartialEq", &["eq", "ne"]),
        ("PartialOrd", "partial_cmp") => ("PartialOrd", &["partial_cmp"]),
        ("Ord", "cmp") => ("Ord", &["cmp"]),
        ("Hash", "hash") => ("Hash", &["hash"]),
        ("Deref", "deref") => ("Deref", &["deref"]),
        ("Write", "write_str" | "write_char" | "write_fmt") => ("Write", &["write_str", "write_char", "write_fmt"]),
        _ => return None,
    })
}

/// `std::ops` traits behind binary operators: (trait, its methods).
pub(super) fn binary_op_trait(op: &syn::BinOp) -> Option<(&'static str, &'static [&'static str])> {
    use syn::BinOp::*;
    Some(match op {
        Add(_) => ("Add", &["add"]),
        Sub(_) => ("Sub", &["sub"]),
        Mul(_) => ("Mul", &["mul"]),
        Div(_) => ("Div", &["div"]),
        Rem(_) => ("Rem", &["rem"]),
        BitAnd(_) => ("BitAnd", &["bitand"]),
        BitOr(_) => ("BitOr", &["bitor"]),
        BitXor(_) => ("BitXor", &["bitxor"]),
        Shl(_) => ("Shl", &["shl"]),
        Shr(_) => ("Shr", &["shr"]),
        AddAssign(_) => ("AddAssign", &["add_assign"]),
        SubAssign(_) => ("SubAssign", &["sub_assign"]),
        MulAssign(_) => ("MulAssign", &["mul_assign"]),
        DivAssign(_) => ("DivAssign", &["div_assign"]),
        RemAssign(_) => ("RemAssign", &["rem_assign"]),
        BitAndAssign(_) => ("BitAndAssign", &["bitand_assign"]),
        BitOrAssign(_) => ("BitOrAssign", &["bitor_assign"]),
        BitXorAssign(_) => ("BitXorAssign", &["bitxor_assign"]),
        ShlAssign(_) => ("ShlAssign", &["shl_assign"]),
        ShrAssign(_) => ("ShrAssign", &["shr_assign"]),
        Eq(_) | Ne(_) => ("PartialEq", &["eq", "ne"]),
        Lt(_) | Le(_) | Gt(_) | Ge(_) => ("PartialOrd", &["partial_cmp", "lt", "le", "gt", "ge"]),
        _ => return None,
    })
}

/// Macros whose arguments follow a format string: `{}` arguments call `Display::fmt`, `{:?}` `Debug::fmt`.
pub(super) const FORMAT_MACROS: &[&str] = &[
    "format",
    "format_args",
    "print",
    "println",
    "eprint",
    "eprintln",
    "write",
    "writeln",
    "panic",
    "unreachable",
    "todo",
    "unimplemented",
    "assert",
    "assert_eq",
    "assert_ne",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
];

/// Primitive types: a by-value parameter of one is dropped without running code.
pub(super) const PRIMITIVES: &[&str] = &[
    "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize", "f32", "f64", "bool",
    "char",
];

/// Operand types whose operators are std's (the primitives, `str` and `String`), never workspace impls.
pub(super) const OPERATOR_PRIMITIVES: &[&str] = &[
    "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize", "f32", "f64", "bool",
    "char", "str", "String",
];

/// Smart pointers looked through for method resolution: `Box<T>` has `T`'s methods.
pub(super) const SMART_POINTERS: &[&str] = &["Box", "Rc", "Arc"];

/// The std type name of slices and arrays (`[u8]`, `[T; 4]`): workspace impls on any of them are candidates.
pub(super) const SLICE: &str = "[_]";

/// The std type name of raw pointers (`*const u8`, `*mut T`), whose arithmetic ([`POINTER_METHODS`]) is an
/// instruction or two.
pub(super) const RAW_POINTER: &str = "*_";

/// Raw pointer methods that compute an address or test one, in constant time: cheap (they keep a body trivial) on a
/// receiver that is a raw pointer or whose type is not known, never on a named type (an `add` of some crate's type
/// may do anything).
pub(super) const POINTER_METHODS: &[&str] = &[
    "add",
    "sub",
    "offset",
    "offset_from",
    "byte_add",
    "byte_sub",
    "byte_offset",
    "wrapping_offset",
    "cast",
    "cast_mut",
    "cast_const",
    "is_null",
];

/// `LocalKey`'s methods that take a closure: on a `SCREAMING_CASE` name they are a `thread_local!`'s.
pub(super) const LOCAL_KEY_METHODS: &[&str] = &["with", "with_borrow", "with_borrow_mut"];

/// Free functions of the std prelude: a call to one that the workspace does not define leaves it.
pub(super) const PRELUDE_FNS: &[&str] = &["drop", "size_of", "size_of_val", "align_of", "align_of_val"];

/// Std containers whose contents a known method reaches (see [`wrapper_method`]): value types keep them as
/// `TyRef::Wrapped`.
pub(super) const STD_WRAPPERS: &[&str] = &["Mutex", "RwLock", "RefCell", "Option", "Result", "OnceCell", "OnceLock"];

/// Guards: they deref to their contents, and have no methods of their own worth resolving.
pub(super) const GUARDS: &[&str] = &["MutexGuard", "RwLockReadGuard", "RwLockWriteGuard", "Ref", "RefMut"];

/// Std methods that hand back a value of the receiver's own type (or a reference to it) on any type without a
/// workspace method of that name.
pub(super) const SAME_VALUE_METHODS: &[&str] =
    &["clone", "to_owned", "as_ref", "as_mut", "borrow", "borrow_mut", "deref", "deref_mut"];

/// What `method` on the std wrapper `wrapper` returns: the wrappers around the contents, outermost first (empty:
/// the contents themselves). `Mutex::lock` gives `LockResult<MutexGuard<T>>`: `["Result", "MutexGuard"]`.
pub(super) fn wrapper_method(wrapper: &str, method: &str) -> Option<&'static [&'static str]> {
    let wrappers: &'static [&'static str] = match (wrapper, method) {
        ("Mutex", "lock" | "try_lock") => &["Result", "MutexGuard"],
        ("Mutex" | "RwLock", "get_mut" | "into_inner") => &["Result"],
        ("RwLock", "read" | "try_read") => &["Result", "RwLockReadGuard"],
        ("RwLock", "write" | "try_write") => &["Result", "RwLockWriteGuard"],
        ("RefCell", "borrow") => &["Ref"],
        ("RefCell", "borrow_mut") => &["RefMut"],
        ("RefCell", "try_borrow") => &["Result", "Ref"],
        ("RefCell", "try_borrow_mut") => &["Result", "RefMut"],
        ("RefCell", "get_mut" | "into_inner" | "take") => &[],
        ("Option" | "Result", "unwrap" | "expect" | "unwrap_unchecked" | "unwrap_or_default") => &[],
        ("Option" | "Result", "unwrap_or" | "unwrap_or_else") => &[],
        ("Option", "as_ref" | "as_mut" | "as_deref" | "as_deref_mut" | "take" | "cloned" | "copied") => &["Option"],
        ("Option", "filter" | "or" | "or_else" | "xor" | "replace") => &["Option"],
        ("Option", "insert" | "get_or_insert" | "get_or_insert_with") => &[],
        ("Option", "ok_or" | "ok_or_else") => &["Result"],
        ("Result", "ok") => &["Option"],
        ("Result", "as_ref" | "as_mut" | "or" | "or_else" | "map_err" | "cloned" | "copied") => &["Result"],
        ("OnceCell" | "OnceLock", "get" | "get_mut" | "take" | "into_inner") => &["Option"],
        ("OnceCell" | "OnceLock", "get_or_init") => &[],
        (_, "clone") => SAME_WRAPPER,
        _ => return None,
    };
    Some(wrappers)
}

/// What `method` on a std sequence (`Vec`, `VecDeque`, `String`, a slice or array) returns when the name tells: an
/// `Option` of an element (`first`, `last_mut`, `get`, `pop`; the element's type is not kept) or the same sequence
/// (`split_off`), so that `v.first().expect(..)` and `v.split_off(0).len()` are std's methods, not every workspace
/// method of that name.
pub(super) fn sequence_method(ty: &TyRef, method: &str) -> Option<TyRef> {
    let sequence = match ty {
        TyRef::Path(p) if p.segs.len() == 1 => p.segs[0].as_str(),
        TyRef::Std(name) => name,
        _ => return None,
    };
    let element = || Some(TyRef::Wrapped { wrapper: "Option".to_owned(), inner: Box::new(TyRef::Unknown) });
    match (sequence, method) {
        ("Vec" | "VecDeque" | SLICE, "first" | "last" | "first_mut" | "last_mut" | "get" | "get_mut") => element(),
        ("Vec" | "VecDeque", "pop") | ("VecDeque", "pop_front" | "pop_back" | "front" | "back") => element(),
        ("VecDeque", "front_mut" | "back_mut") => element(),
        ("Vec" | "VecDeque" | "String", "split_off") => Some(ty.clone()),
        _ => None,
    }
}

/// In [`wrapper_method`]'s answer: the receiver's own wrapper (`clone`).
pub(super) const SAME_WRAPPER: &[&str] = &["*"];

/// Return types that are futures by name (`BoxFuture<'a, T>` of the futures crate).
pub(super) const BOXED_FUTURES: &[&str] = &["BoxFuture", "LocalBoxFuture"];

/// Macros that build a std value: a method called on their result is a std method.
pub(super) const STD_VALUE_MACROS: &[&str] = &["format", "vec", "concat", "stringify"];

/// Types of the standard prelude: a method on them leaves the workspace unless a workspace trait adds it.
pub(super) const STD_TYPES: &[&str] = &[
    "Vec", "String", "Option", "Result", "Some", "Ok", "Err", "Box", "HashMap", "HashSet", "BTreeMap", "BTreeSet",
    "VecDeque", "Rc", "Arc", "RefCell", "Cell", "Mutex", "RwLock", "str", "usize", "u8", "u16", "u32", "u64", "u128",
    "isize", "i8", "i16", "i32", "i64", "i128", "f32", "f64", "bool", "char", "PathBuf", "Path", "Duration", "Instant",
];

/// Methods that derives and std traits give workspace types: not finding them on a type is expected.
pub(super) const DERIVED_METHODS: &[&str] = &[
    "clone",
    "clone_from",
    "eq",
    "ne",
    "cmp",
    "partial_cmp",
    "lt",
    "le",
    "gt",
    "ge",
    "hash",
    "fmt",
    "default",
    "to_string",
    "to_owned",
    "into",
    "try_into",
    "from",
    "try_from",
    "as_ref",
    "as_mut",
    "borrow",
    "borrow_mut",
    "deref",
    "deref_mut",
    "drop",
    "max",
    "min",
    "clamp",
];

/// Most statements a trivial function may have, its own and those of the trivial functions it calls.
pub(super) const TRIVIAL_MAX_STATEMENTS: u32 = 6;

/// Most statements a forwarder's body may have, its one call's included (`analysis::trivial::forwarded_callees`).
pub(super) const FORWARDER_MAX_STATEMENTS: u32 = 2;

/// Std methods that run in constant time without allocating (`Vec::len`, `Option::unwrap`, `slice::get`): a call
/// to one of these, and to nothing in the workspace, keeps a body trivial. A workspace method of the same name is
/// judged by its own body instead.
const CHEAP_STD_METHODS: &[&str] = &[
    "unwrap",
    "expect",
    "unwrap_or",
    "unwrap_or_default",
    "copied",
    "as_ref",
    "as_mut",
    "as_deref",
    "as_deref_mut",
    "as_str",
    "as_slice",
    "as_bytes",
    "as_ptr",
    "get",
    "get_mut",
    "first",
    "last",
    "first_mut",
    "last_mut",
    "pop",
    "index",
    "index_mut",
    "abs",
    "wrapping_add",
    "wrapping_sub",
    "saturating_add",
    "saturating_sub",
    "checked_add",
    "checked_sub",
    "ok",
    "err",
    "is_ascii",
    "is_ascii_digit",
    "is_ascii_alphabetic",
    "is_ascii_alphanumeric",
    "is_ascii_whitespace",
    "is_ascii_punctuation",
    "to_ascii_lowercase",
    "to_ascii_uppercase",
];

/// `a.min(b)`, `std::cmp::max(a, b)`, `mem::replace(..)`: cheap with these argument counts (an iterator's
/// `min()` is a loop).
/// Std collections whose `new()` and `default()` make an empty value without allocating (`HashMap::new` reads its
/// thread-local seed): `T::new()` on one, or on a workspace alias of one (serde_json's `type MapImpl<K, V> = BTreeMap<K, V>`),
/// keeps a body trivial.
pub(super) const EMPTY_COLLECTIONS: &[&str] =
    &["Vec", "String", "VecDeque", "LinkedList", "BinaryHeap", "BTreeMap", "BTreeSet", "HashMap", "HashSet"];

pub(super) const CHEAP_STD_FNS: &[(&str, usize)] = &[
    ("min", 2),
    ("max", 2),
    ("swap", 2),
    ("replace", 2),
    ("take", 1),
    ("from_raw_parts", 2),
    ("from_raw_parts_mut", 2),
];

/// Which implicit calls the graph models. Printed under the plan and in docs/graph-json.md.
pub const IMPLICIT_CALLS: &str = "implicit calls: `x.await` on a call is that call's edge (the awaited async fn); \
a function named as a value (`.map(parse)`) is an edge; calls in closures belong to the enclosing function, and \
also to a workspace function that calls (or forwards) the closure passed to it (directly, behind `&`/`Some(..)`, or \
bound to a local first); an async fn's future passed to a workspace function that polls or awaits its parameter \
(`block_on(f(x))`) is an edge of that function; on values of a workspace type the syntax shows: `x[i]` \
(Index/IndexMut), operators (`+`, `-=`, unary `-`/`!`, `==`, `<`: std::ops, PartialEq, PartialOrd impls), `{}`/`{:?}` \
arguments of format!/write!/println! and `.to_string()` (Display/Debug impls), `for _ in x` \
(IntoIterator/Iterator::next), a `let` binding's Drop, a method the type lacks (Deref/DerefMut); `.into()` \
(workspace From impls); a `thread_local!`/`lazy_static!` initializer's calls belong to each function of the same \
file that names the static; not modelled: `?` (From::from), deref coercions, callbacks stored in fields, Drop of \
temporaries and fields";
