//! Rayon parallel iterators as a program writes them (issue 13): chains consumed where they start, whose closures
//! borrow, move, return values, fail with `?`, declare their return type, zip with a second chain, nest, and sort;
//! functions passed by name, with one argument or two, or an identity (adopted as the closures are); a chain stored
//! before it is consumed (not adopted: the plan warns); and a type of the program's own whose `par_iter` is no rayon
//! iterator (wrapped the same, behaving the same); and a chain whose callee retires on the workers.

use rayon::prelude::*;

fn main() {
    // Two workers whatever the machine, so the trees compare across machines.
    rayon::ThreadPoolBuilder::new().num_threads(2).build_global().expect("rayon's global pool");
    let words: Vec<String> = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"].iter().map(|w| w.to_string()).collect();
    println!("{}", summarise(&words));
    println!("{:?}", sorted(12));
    println!("{}", tally(20_000));
}

/// Root: one parallel chain of each form.
fn summarise(words: &[String]) -> String {
    let total: usize = words.par_iter().map(|w| weigh(w)).sum();
    let suffix = String::from("!");
    let shouted: Vec<String> = words.par_iter().map(move |w| shout(w, &suffix)).collect();
    let checked: Result<(), String> = words.par_iter().try_for_each(|w| {
        check(w)?;
        Ok(())
    });
    let heavy = words.par_iter().zip(words.par_iter().map(|w| weigh(w))).filter(|(_, n)| *n > 4).count();
    let typed = words.par_iter().map(|w| -> usize { weigh(w) * 2 }).max();
    let nested: usize =
        (0..3usize).into_par_iter().map(|i| (0..=i).into_par_iter().map(|j| weigh(&words[j])).sum::<usize>()).sum();
    let stored = words.par_iter().map(|w| weigh(w));
    let later: usize = stored.sum();
    let by_name: usize = words.par_iter().map(String::len).sum();
    let named: usize = words.par_iter().map(String::as_str).map(weigh).sum();
    let mut seen = 0;
    Bag(vec![1, 2, 3]).par_iter().for_each(|x| seen += x);
    format!(
        "total {total}, {} shouted, checked {checked:?}, heavy {heavy}, typed {typed:?}, nested {nested}, later \
         {later}, by name {by_name}, named {named}, seen {seen}",
        shouted.len()
    )
}

/// Root: a parallel sort's comparisons.
fn sorted(n: u32) -> Vec<u32> {
    let mut v: Vec<u32> = (0..n).rev().collect();
    v.par_sort_by(|a, b| compare(*a, *b));
    v.par_sort_by(compare_refs);
    v
}

/// Root: a chain long enough that a worker's part folds and its tiny callee retires there, its later calls counted
/// on the workers.
fn tally(n: u64) -> u64 {
    (0..n).into_par_iter().map(|i| step(i)).reduce(zero, add)
}

fn step(i: u64) -> u64 {
    i % 7
}

fn weigh(word: &str) -> usize {
    word.len()
}

fn zero() -> u64 {
    0
}

fn add(a: u64, b: u64) -> u64 {
    a + b
}

fn shout(word: &str, suffix: &str) -> String {
    format!("{}{suffix}", word.to_uppercase())
}

fn check(word: &str) -> Result<(), String> {
    if word.is_empty() {
        return Err("an empty word".to_string());
    }
    Ok(())
}

fn compare(a: u32, b: u32) -> std::cmp::Ordering {
    a.cmp(&b)
}

fn compare_refs(a: &u32, b: &u32) -> std::cmp::Ordering {
    b.cmp(a)
}

/// A collection of the program's own with a `par_iter` that is a plain iterator.
struct Bag(Vec<u32>);

impl Bag {
    fn par_iter(&self) -> std::slice::Iter<'_, u32> {
        self.0.iter()
    }
}
