#![allow(unused_imports)]
use odm::{Database, Document, Embedded, Group, Reshape, Sort};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "posts")]
struct Post {
    #[odm(id)]
    id: i64,
    author: String,
    tags: Vec<String>,
    votes: i32,
}

#[derive(Serialize, Deserialize, Document)]
#[odm(collection = "users")]
struct User {
    #[odm(id)]
    id: u32,
    karma: i64,
}

#[derive(Serialize, Deserialize, Embedded)]
struct Out {
    author: String,
    total: i64,
    small: i32,
    mean: f64,
    whole: i64,
    label: String,
    ids: Vec<i64>,
    one: i64,
    ratio: f64,
    users: Vec<User>,
}

fn main() -> odm::Result<()> {
    let db = Database::in_memory()?;
    let posts = db.collection::<Post>()?;
    let (f, o) = (Post::fields(), Out::fields());
    let _ = posts.aggregate().group(Group::<Post, Out>::by(&o.author, &f.votes));
    Ok(())
}
