// Signs in, then lists and adds notes in one group through the JSON API.
"use strict";

let token = null;
let group = 1;
const $ = (selector) => document.querySelector(selector);

async function api(method, path, body) {
  const headers = { "content-type": "application/json" };
  if (token) headers.authorization = `Bearer ${token}`;
  const response = await fetch(path, { method, headers, body: body && JSON.stringify(body) });
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status}`);
  return response.status === 204 ? null : response.json();
}

async function refresh() {
  const notes = await api("GET", `/groups/${group}/notes`);
  const list = $("#notes");
  list.replaceChildren(...notes.map((note) => {
    const item = document.createElement("li");
    const title = document.createElement("strong");
    title.textContent = note.title;
    const meta = document.createElement("small");
    meta.textContent = ` #${note.id} v${note.version}`;
    item.append(title, meta, document.createElement("br"), note.body);
    return item;
  }));
  $("#status").textContent = `${notes.length} notes in group ${group}`;
}

$("#sign-in").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = new FormData(event.target);
  group = Number(form.get("group")) || 0;
  try {
    ({ token } = await api("POST", "/auth/token", { user: form.get("user") }));
    $("#new-note").hidden = false;
    await refresh();
  } catch (error) {
    $("#status").textContent = error.message;
  }
});

$("#new-note").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = new FormData(event.target);
  try {
    await api("POST", `/groups/${group}/notes`, { title: form.get("title"), body: form.get("body") });
    event.target.reset();
    await refresh();
  } catch (error) {
    $("#status").textContent = error.message;
  }
});
