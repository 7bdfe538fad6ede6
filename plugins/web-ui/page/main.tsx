import { render } from 'preact'
import { App, applyStoredTheme } from './app.js'
import './styles.css'

applyStoredTheme()
render(<App />, document.getElementById('app')!)
