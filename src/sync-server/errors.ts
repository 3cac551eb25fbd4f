/** The sync server's error with the HTTP status and code it answers with. */

/** An error with the HTTP status the server answers with. */
export class SyncHttpError extends Error {
  override name = "SyncHttpError";
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}
