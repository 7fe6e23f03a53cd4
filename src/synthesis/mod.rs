//! From a review comment to an executable test (the paper's section 4.2.3), the parts that do not
//! talk to a model or to Docker: reading the model's answer ([`answer`]), judging a candidate from
//! its runs on the reviewed and the fixed commit ([`oracle`]), and reading the test statically
//! ([`source`]: its imports, its use of the network, behavioural or structural), and the facts the
//! model is given so it need not guess them ([`facts`]: signatures, the tests' imports; [`observed`]: calls whose results differ between the two commits). The loop that ties
//! them to the model and the sandbox, one comment's candidates judged until one is accepted, is
//! the `test_synthesis` stage's `writer`; its adapter only reads the inputs and stores what it
//! returns.

pub mod answer;
pub mod example;
pub mod expect;
pub mod facts;
pub mod judge;
pub mod mend;
pub mod observed;
pub mod oracle;
pub mod partial;
pub mod project;
pub mod relevance;
pub mod source;
pub mod split;
