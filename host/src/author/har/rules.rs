//! What correlation found, as the plan carries it to the script writers: the values
//! extracted from responses ([`Rule`]), the values made unique per VU ([`Unique`]) and
//! those left as recorded ([`Unresolved`]).

/// Where a value is taken from in a response.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Source {
    /// A header's whole value.
    Header(String),
    /// A query parameter of a header's URL (a `Location`).
    HeaderParam(String, String),
    /// A field of a JSON body, as a k6 selector path (`data.items.0.id`).
    Json(String),
    /// The value of `<input name=NAME>`.
    Input(String),
    /// A field of the JSON in `<script id=ID>`.
    ScriptJson(String, String),
    /// The text between two recorded boundaries.
    Between(String, String),
}

impl Source {
    /// How the source reads in a comment and in the command's output.
    pub(crate) fn describe(&self) -> String {
        match self {
            Source::Header(h) => format!("header {h}"),
            Source::HeaderParam(h, p) => format!("query parameter {p} of header {h}"),
            Source::Json(p) => format!("JSON field {p}"),
            Source::Input(n) => format!("<input name=\"{n}\"> value"),
            Source::ScriptJson(id, p) => format!("JSON field {p} of <script id=\"{id}\">"),
            Source::Between(l, r) => format!("text between {l:?} and {r:?}"),
        }
    }
}

/// One correlation: a value, where it comes from, who sends it back.
#[derive(Debug, Clone)]
pub(crate) struct Rule {
    /// The variable holding it.
    pub var: String,
    /// Where it is extracted.
    pub source: Source,
    /// The variable of the response it is extracted from.
    pub from_var: String,
    /// That response's request, `METHOD /path`.
    pub from_label: String,
    /// The requests sending it back, with where (`POST /survey/answer form field csrf`).
    pub used_by: Vec<String>,
    /// Whether a request sends it other than as a field left to a submitted form (which
    /// takes it from the live page itself): only then is it extracted where the code
    /// submits forms (JavaScript, Python).
    pub outside_forms: bool,
}

/// A value the server must see unique, made per VU and iteration: a user name or email
/// that a sign-up sent. Replayed by many VUs or iterations it would collide (409).
#[derive(Debug, Clone)]
pub(crate) struct Unique {
    /// The variable holding it.
    pub var: String,
    /// The recorded value.
    pub value: String,
    /// What the made value starts with (the recorded one, or an email's local part).
    pub prefix: String,
    /// What it ends with (an email's `@domain`, else empty).
    pub suffix: String,
    /// The request that created it, with where (`POST /accounts JSON field user`).
    pub created_by: String,
    /// The requests sending it, with where.
    pub used_by: Vec<String>,
}

/// A value sent back that no earlier response carried.
#[derive(Debug, Clone)]
pub(crate) struct Unresolved {
    /// The value.
    pub value: String,
    /// Where it was sent.
    pub used_by: String,
}
