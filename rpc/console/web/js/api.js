// The console's JSON API (rpc/console/console_api.h). The API key lives in sessionStorage
// only (gone when the tab closes) and travels as "Authorization: Bearer KEY"; it is never
// written into the page.

const KEY = "shoal.console.key";

export class ApiError extends Error {
  constructor(status, code, message) {
    super(`${code}: ${message}`);
    this.status = status;
    this.code = code;
  }
}

export function setKey(key) {
  if (key) sessionStorage.setItem(KEY, key);
  else sessionStorage.removeItem(KEY);
}

export function hasKey() {
  return sessionStorage.getItem(KEY) !== null;
}

// Called with the ApiError when the server answers 401 (the key is unknown or missing).
let onUnauthenticated = () => {};
export function setUnauthenticatedHandler(handler) { onUnauthenticated = handler; }

export async function call(method, path, body) {
  const headers = {};
  const key = sessionStorage.getItem(KEY);
  if (key) headers["Authorization"] = `Bearer ${key}`;
  const init = {method, headers, cache: "no-store"};
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(`/api/${path}`, init);
  let json = null;
  try { json = await response.json(); } catch (e) { json = null; }
  if (!response.ok) {
    const error = json && json.error ? json.error : {code: String(response.status), message: response.statusText};
    const apiError = new ApiError(response.status, error.code, error.message);
    if (response.status === 401) onUnauthenticated(apiError);
    throw apiError;
  }
  return json;
}

export const get = (path) => call("GET", path);
export const post = (path, body) => call("POST", path, body || {});
export const del = (path) => call("DELETE", path);
export const enc = encodeURIComponent;
