// What each page gives the router in main.ts (its element, the runs it shows, refresh and teardown).

/** What a page gives the router. */
export interface Page {
  el: HTMLElement;
  /** Runs it shows (ids); an event about one of them calls `refresh`. Empty: every change refreshes. */
  runs: string[];
  refresh?(): Promise<void>;
  destroy?(): void;
}
