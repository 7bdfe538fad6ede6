import { render } from 'preact'
import './styles.css'

render(<h1>llamagate</h1>, document.getElementById('app')!)
