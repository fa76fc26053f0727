use shapes::{Grid, Show};

fn main() {
    let grid = Grid { cells: vec![1, 2, 3] };
    let mut total = grid.sum();
    total += shapes::quick(10);
    total += shapes::grain::coarse(5);
    total += shapes::shown(&["a", "b"], 7, String::from("x")) as u64;
    total += report(&grid);
    println!("{}", total.show(0));
}

fn report(grid: &Grid) -> u64 {
    let mut total = 0;
    for c in &grid.cells {
        total += c;
    }
    total + extra(grid)
}

#[cfg(feature = "grain")]
fn extra(grid: &Grid) -> u64 {
    grid.fine_sum()
}

#[cfg(not(feature = "grain"))]
fn extra(grid: &Grid) -> u64 {
    let mut total = 0;
    for c in &grid.cells {
        total += c * 2;
    }
    total
}
