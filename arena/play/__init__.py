"""Playing games: the executor that asks the referee for a game, the tournament runner, rating in
game order (rate), a whole run with progress through callbacks (session), ladders and comparisons."""
