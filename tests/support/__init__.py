"""What the tests share: fixtures, tiny released layouts, scripted endpoints, the browser."""
