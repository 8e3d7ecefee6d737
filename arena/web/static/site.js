// What every page may use, instead of inline handlers (the content security policy allows no
// inline script, arena/web/guard.py): a <select data-go> goes to the address its chosen option
// holds (the leaderboard's tournament picker). No build step, no library.
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  for (const select of document.querySelectorAll("select[data-go]")) {
    select.addEventListener("change", () => {
      const target = select.value;
      if (target.startsWith("/") && !target.startsWith("//")) location.href = target;  // this site's pages only
    });
  }
});
