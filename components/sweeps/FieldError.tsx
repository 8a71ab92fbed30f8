"use client";
/** The server's (or the form's own) message for field `name` or any field under it, beside that field. */
export function FieldError({ errors, name, form }: { errors: Record<string, string>; name: string; form: "sweep" | "agent" }) {
  const msg = Object.entries(errors).find(([k]) => k === name || k.startsWith(`${name}.`))?.[1];
  return msg ? (
    <p className="field-error" data-testid={`${form}-error-${name}`}>
      {msg}
    </p>
  ) : null;
}

