//! Why a selector, a link or a form could not be used: the kinds the `html` interface
//! reports to the plugin, each with the message the plugin's author reads.

/// What went wrong with a page query, a link or a form submission.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HtmlError {
    /// The CSS selector does not parse.
    #[error("invalid CSS selector {selector:?}: {reason}")]
    Selector {
        /// The selector as given.
        selector: String,
        /// The parser's reason.
        reason: String,
    },
    /// The base URL is not an absolute URL.
    #[error("cannot resolve {reference:?} against {base:?}: {reason}")]
    Base {
        /// The link to resolve.
        reference: String,
        /// The base as given.
        base: String,
        /// The URL parser's reason.
        reason: url::ParseError,
    },
    /// The link does not resolve against a valid base.
    #[error("cannot resolve {reference:?} against {base}: {reason}")]
    Join {
        /// The link to resolve.
        reference: String,
        /// The (parsed) base.
        base: url::Url,
        /// The URL parser's reason.
        reason: url::ParseError,
    },
    /// The node given as the form is not a `form` element.
    #[error("node {0} is not a form")]
    NotAForm(u32),
    /// The node given as the pressed button does not submit a form.
    #[error("node {0} is not a submit button")]
    NotASubmitButton(u32),
    /// The pressed button belongs to another form.
    #[error("the submit button (node {0}) is not one of the form's")]
    ButtonOfAnotherForm(u32),
    /// `method=dialog`: the form closes a dialog instead of sending a request.
    #[error("a form with method=dialog closes a dialog; it sends nothing")]
    DialogMethod,
    /// The resolved action is not a URL a GET form can put its fields on.
    #[error("{0}")]
    Action(url::ParseError),
}

impl From<HtmlError> for String {
    /// The message the WIT `result<_, string>` carries to the plugin.
    fn from(e: HtmlError) -> Self {
        e.to_string()
    }
}
