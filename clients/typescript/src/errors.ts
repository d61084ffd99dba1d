/**
 * The Python library's error hierarchy (hippocampus/errors.py), one class each, so a caller catches
 * exactly what it can handle:
 *
 *     HippocampusError
 *      +-- ConfigError            (400; 421 for a host name the service does not answer to)
 *      |    +-- AuthError             401 / 429: the API key is missing, unknown, or tried too often
 *      +-- InvalidInput           422 (413, 415): bad arguments; nothing was changed
 *      +-- NotFound               404: no such memory for this user (also another tenant's id)
 *      +-- StoreError             503
 *      |    +-- StoreLockedError, SchemaMismatchError, StoreCorruptedError
 *      |    +-- ServiceUnavailable    the service could not be reached (no answer came back)
 *      +-- EmbeddingError         503
 *      +-- LLMError               502
 *
 * The service answers every error as {"error": {"type", "message"}}: `type` names the class. A type
 * this client does not know (Forbidden, MethodNotAllowed, InternalError, or one a newer service adds)
 * becomes the class its HTTP status stands for, else the base class, exactly as the Python Client's
 * `errors.from_wire` does; `error.type` keeps the name the service sent.
 */

/** Base class of every error the client raises on purpose. */
export class HippocampusError extends Error {
  override name = "HippocampusError";
  /** The HTTP status of the answer; undefined when no answer came back or the client refused locally. */
  readonly status: number | undefined;
  readonly #type: string | undefined;

  constructor(message: string, options: { type?: string; status?: number; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.#type = options.type || undefined;
    this.status = options.status;
  }

  /** The service's error type (a class name of the Python library, or another name it sent); the class's
   * own name when the error did not come from the service. */
  get type(): string {
    return this.#type ?? this.name;
  }
}

export class ConfigError extends HippocampusError {
  override name = "ConfigError";
}

/** The service refused the API key (missing, unknown, or too many wrong ones from this address). */
export class AuthError extends ConfigError {
  override name = "AuthError";
}

/** Bad arguments; raised before anything is written. */
export class InvalidInput extends HippocampusError {
  override name = "InvalidInput";
}

/** No such memory for this user; another user's (or another tenant's) memory reads the same. */
export class NotFound extends HippocampusError {
  override name = "NotFound";
}

export class StoreError extends HippocampusError {
  override name = "StoreError";
}

export class StoreLockedError extends StoreError {
  override name = "StoreLockedError";
}

export class SchemaMismatchError extends StoreError {
  override name = "SchemaMismatchError";
}

export class StoreCorruptedError extends StoreError {
  override name = "StoreCorruptedError";
}

/** The service could not be reached (not running, wrong URL, timed out); nothing or no answer came back. */
export class ServiceUnavailable extends StoreError {
  override name = "ServiceUnavailable";
}

export class EmbeddingError extends HippocampusError {
  override name = "EmbeddingError";
}

export class LLMError extends HippocampusError {
  override name = "LLMError";
}

type ErrorClass = new (message: string, options?: { type?: string; status?: number; cause?: unknown }) => HippocampusError;

/** errors.HTTP_STATUS of the Python library: most specific first; the first class with a status is its class. */
export const HTTP_STATUS: ReadonlyArray<readonly [ErrorClass, number]> = [
  [AuthError, 401],
  [InvalidInput, 422],
  [NotFound, 404],
  [ConfigError, 400],
  [ServiceUnavailable, 503],
  [StoreLockedError, 503],
  [SchemaMismatchError, 503],
  [StoreCorruptedError, 503],
  [StoreError, 503],
  [EmbeddingError, 503],
  [LLMError, 502],
  [HippocampusError, 500],
];

// by each class's `name` field, a literal, so that a minifier renaming the classes changes nothing
const BY_NAME: ReadonlyMap<string, ErrorClass> = new Map(HTTP_STATUS.map(([cls]) => [new cls("").name, cls] as const));

/** The error a service's answer names: by its type, else by its HTTP status, else the base class. */
export function fromWire(type: string, message: string, status: number): HippocampusError {
  const cls = BY_NAME.get(type) ?? HTTP_STATUS.find(([, s]) => s === status)?.[0] ?? HippocampusError;
  return new cls(message, { type, status });
}

/** The error of an HTTP answer of status >= 400, from its {"error": {"type", "message"}} body when it has one. */
export function errorOf(status: number, text: string): HippocampusError {
  try {
    const detail = (JSON.parse(text) as { error?: { type?: unknown; message?: unknown } }).error;
    if (detail && typeof detail === "object" && detail.type !== undefined && detail.message !== undefined) {
      return fromWire(String(detail.type), String(detail.message), status);
    }
  } catch {
    // not JSON: a proxy's page, say; fall through
  }
  return fromWire("", `HTTP ${status}: ${text.slice(0, 200)}`, status);
}
