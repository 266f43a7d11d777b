//! What the model says about each of its shapes, for the wire formats that
//! cannot learn it from serde: every member's JSON name, its Query/XML
//! name, and its kind (text, a whole number, a list, a map, a structure).
//!
//! The JSON protocol needs none of this (serde reads the shapes directly);
//! the Query protocol folds form fields into the model's tree and renders
//! answers as XML from these tables alone, so a new member is one line next
//! to its shape in [`super::model`], never a special case in the protocol.

/// One member of a shape.
#[derive(Debug)]
pub struct Member {
    /// The name in JSON, as serde reads and writes it.
    pub json: &'static str,
    /// The names the Query protocol uses for it, when they differ from the
    /// JSON name: the first is the one it renders; the others are accepted
    /// in requests too.
    pub query: &'static [&'static str],
    pub kind: Kind,
}

/// How a member's value is written.
#[derive(Debug)]
pub enum Kind {
    Text,
    /// `true` or `false`.
    Boolean,
    /// A whole number: text in a form, a number in JSON.
    Integer,
    /// Items flattened as `Name.1`, `Name.2`, … in a form, and as repeated
    /// `<Name>` elements in XML.
    List(&'static Kind),
    /// Entries flattened as `Name.N.<key>` and `Name.N.<value>`.
    Map {
        key: &'static str,
        value: &'static str,
        of: &'static Kind,
    },
    Structure(&'static [Member]),
    /// Not a member but the members of another shape, at this level (what
    /// `#[serde(flatten)]` does in the Rust shape).
    Flattened(&'static [Member]),
}

impl Member {
    /// A text member named the same in JSON and Query.
    pub const fn text(name: &'static str) -> Member {
        Member::named(name, Kind::Text)
    }

    pub const fn integer(name: &'static str) -> Member {
        Member::named(name, Kind::Integer)
    }

    /// A member named the same in JSON and Query.
    pub const fn named(name: &'static str, kind: Kind) -> Member {
        Member {
            json: name,
            query: &[],
            kind,
        }
    }

    /// A member whose Query name differs from its JSON name.
    pub const fn renamed(json: &'static str, query: &'static [&'static str], kind: Kind) -> Member {
        Member { json, query, kind }
    }

    /// The members of `shape`, as if written here (see [`Kind::Flattened`]).
    pub const fn flattened(shape: &'static [Member]) -> Member {
        Member {
            json: "",
            query: &[],
            kind: Kind::Flattened(shape),
        }
    }

    /// Calls `f` with every member of `members`, the flattened ones'
    /// members in their place; stops at the first error. Allocates nothing:
    /// the Query protocol walks the tables on every request.
    pub fn visit<E>(
        members: &'static [Member],
        f: &mut impl FnMut(&'static Member) -> Result<(), E>,
    ) -> Result<(), E> {
        for member in members {
            match &member.kind {
                Kind::Flattened(inner) => Member::visit(inner, f)?,
                _ => f(member)?,
            }
        }
        Ok(())
    }

    /// The member of `members` (flattened ones included) named `json` in JSON.
    pub fn find(members: &'static [Member], json: &str) -> Option<&'static Member> {
        members.iter().find_map(|member| match &member.kind {
            Kind::Flattened(inner) => Member::find(inner, json),
            _ => (member.json == json).then_some(member),
        })
    }

    /// The name this member has in Query requests and XML answers.
    pub fn query_name(&self) -> &'static str {
        self.query.first().copied().unwrap_or(self.json)
    }

    /// Every name a Query request may give this member.
    pub fn query_names(&self) -> &[&'static str] {
        if self.query.is_empty() {
            std::slice::from_ref(&self.json)
        } else {
            self.query
        }
    }
}

/// A shape of the model: a request or a response structure.
pub trait Shape {
    const MEMBERS: &'static [Member];
}
