"""The `hello` scenario for Locust's FastHttpUser (geventhttpclient), a peer in bench/peers:
each user loops one GET / with no wait, its status checked as the host's `hello` does."""
from locust import FastHttpUser, constant, task


class Hello(FastHttpUser):
    """One GET / per task; a status other than 200 is a failure."""

    wait_time = constant(0)

    @task
    def hello(self):
        with self.client.get("/", catch_response=True) as response:
            if response.status_code != 200:
                response.failure(f"status {response.status_code}")
