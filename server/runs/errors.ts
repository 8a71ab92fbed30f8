/** Errors the run services throw; the REST layer maps them to status codes and FieldErrorsDto. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly fieldErrors?: Record<string, string>,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

export const notFound = (what: string) => new ApiError(404, `${what} not found`);
export const conflict = (message: string) => new ApiError(409, message);
export const badRequest = (message: string, fieldErrors: Record<string, string>) => new ApiError(400, message, fieldErrors);
