import type { ReactNode } from "react";
import localFont from "next/font/local";
import "./globals.css";
import { Providers } from "../components/Providers.tsx";
import { TopBar } from "../components/TopBar.tsx";

// Local font only: nothing is fetched from a font CDN.
const inter = localFont({ src: "./fonts/inter-latin-wght-normal.woff2", display: "swap" });

export const metadata = { title: "Q-RAG Studio" };

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en" className={inter.className}>
      <body>
        <Providers>
          <TopBar />
          {children}
        </Providers>
      </body>
    </html>
  );
}
