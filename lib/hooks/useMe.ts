"use client";
import { useQuery } from "@tanstack/react-query";
import { apiGet } from "../api.ts";
import type { PrincipalDto } from "../contracts/index.ts";

/** The signed-in user (or the implicit local admin); an error (401) when nobody is signed in. */
export function useMe() {
  return useQuery({ queryKey: ["me"], queryFn: ({ signal }) => apiGet<PrincipalDto>("/api/auth/me", signal), retry: false, staleTime: 60_000 });
}

/** Signs out on the server, then leaves for the login page (a full load: the socket reconnects signed out). */
export async function signOut(): Promise<void> {
  await fetch("/api/auth/logout", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
  window.location.assign("/login");
}
