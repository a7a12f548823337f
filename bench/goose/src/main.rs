//! The `hello` scenario as a Goose load test: each user loops one `GET /` and checks
//! that the status is 200, as the host's `hello` plugin does (Goose records a non-2xx
//! answer as a failed request itself; the check here makes the comparison the same work).
//! Run by bench/peers as the tool `goose` with `--host`, `--users`, `--run-time`.

use goose::prelude::*;

#[tokio::main]
async fn main() -> Result<(), GooseError> {
    GooseAttack::initialize()?
        .register_scenario(scenario!("hello").register_transaction(transaction!(hello)))
        .execute()
        .await?;
    Ok(())
}

/// One `GET /`; a status other than 200 fails the transaction.
async fn hello(user: &mut GooseUser) -> TransactionResult {
    let goose = user.get("/").await?;
    match goose.response {
        Ok(ref response) if response.status().as_u16() == 200 => Ok(()),
        _ => Err(Box::new(TransactionError::RequestFailed {
            raw_request: Box::new(goose.request.clone()),
        })),
    }
}
