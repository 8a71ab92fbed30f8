/**
 * Applies the pending database migrations and exits (server/db/migrate.ts; the server also applies
 * them at start).
 *
 *   npm run db:migrate            # uses DATABASE_URL, default file:./data/qrag.db
 */
import { migrate } from "../db/migrate.ts";
import { settings } from "../settings.ts";

const url = settings().databaseUrlFor(settings().dataDir);
migrate(url, { log: (m) => console.log(m) })
  .then((a) => console.log(a.length ? `${a.length} migration(s) applied` : "database is up to date"))
  .catch((e: Error) => {
    console.error(e.message);
    process.exit(1);
  });
